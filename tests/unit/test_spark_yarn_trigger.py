"""The cluster-mode wait in the triggerer (issue 42): the copy and verify operators defer once YARN has the
application, and the trigger's loop decides from the ResourceManager's answers. Pure logic: the hook is a stand-in
giving a scripted sequence of answers (the real wait runs in tests/dags/test_migration_yarn_realhbase.py)."""
from __future__ import annotations

import asyncio

import pytest

from hbase_migration.operators.triggers import SparkYarnApplicationTrigger


class Hook:
    def __init__(self, answers):
        self.answers, self.killed = list(answers), []

    def _query_yarn_application_status(self, app):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def _kill_yarn_application(self, app):
        self.killed.append(app)


def events(trigger, hook):
    trigger._hook = lambda: hook

    async def collect():
        return [e.payload async for e in trigger.run()]

    return asyncio.run(collect())


def test_the_trigger_serializes_what_it_needs_and_no_secret():
    t = SparkYarnApplicationTrigger("spark_yarn", "application_1_0001", 12.0,
                                    spnego={"principal": "p@R", "keytab": "/k/p.keytab", "krb5_conf": None,
                                            "principal_pattern": "HTTP/_HOST@R"})
    path, kwargs = t.serialize()
    assert path == "hbase_migration.operators.triggers.SparkYarnApplicationTrigger"
    assert SparkYarnApplicationTrigger(**kwargs).serialize() == (path, kwargs)
    assert kwargs["spnego"]["keytab"] == "/k/p.keytab"  # a path: the keytab's bytes never leave the worker


@pytest.mark.parametrize("answers, expected", [
    ([("ACCEPTED", "UNDEFINED", ""), ("RUNNING", "UNDEFINED", ""), ("FINISHED", "SUCCEEDED", "")],
     {"status": "SUCCEEDED", "state": "FINISHED", "final_status": "SUCCEEDED"}),
    ([("RUNNING", "UNDEFINED", ""), ("FINISHED", "FAILED", "exit 1")],
     {"status": "FAILED", "state": "FINISHED", "final_status": "FAILED", "diagnostics": "exit 1"}),
    ([RuntimeError("refused"), ("KILLED", "KILLED", "by user")], {"status": "FAILED", "state": "KILLED"}),
    ([RuntimeError("refused")] * 3, {"status": "lost", "diagnostics": "refused"}),
])
def test_the_wait_ends_on_the_applications_final_state(answers, expected, monkeypatch):
    monkeypatch.setattr(SparkYarnApplicationTrigger, "MAX_FAILURES", 3)
    [event] = events(SparkYarnApplicationTrigger("s", "app_1", 0.0), Hook(answers))
    assert {k: event[k] for k in expected} == expected and event["application_id"] == "app_1"


def test_a_quota_breach_kills_the_application(monkeypatch):
    hook = Hook([("RUNNING", "UNDEFINED", "")] * 5)
    trigger = SparkYarnApplicationTrigger("s", "app_2", 0.0, watchdog={"peer_id": "p"})

    class Dog:
        stopped = False

        def stop(self):
            Dog.stopped = True

    def watchdog(breach):
        breach["message"] = "oldWALs quota breach on src"
        return Dog()

    monkeypatch.setattr(trigger, "_watchdog", watchdog)
    assert events(trigger, hook) == [{"status": "quota_breach", "message": "oldWALs quota breach on src",
                                      "application_id": "app_2"}]
    assert hook.killed == ["app_2"] and Dog.stopped


def test_the_operators_defer_in_cluster_mode_only():
    from airflow.sdk.exceptions import TaskDeferred

    from hbase_migration.operators.spark import HBaseVerifyTableOperator

    op = HBaseVerifyTableOperator(task_id="v", table="t")
    op._hook = type("H", (), {"_is_yarn_cluster_mode": True})()
    with pytest.raises(TaskDeferred) as deferred:
        op.poll_until_complete("application_9_0001", {})
    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.trigger.application_id == "application_9_0001" and deferred.value.trigger.watchdog is None
    op.deferrable = False
    op._hook = type("H", (), {"_is_yarn_cluster_mode": True, "_start_yarn_application_status_tracking":
                              lambda self, app: None, "_run_post_submit_commands": lambda self: None})()
    op.poll_until_complete("application_9_0001", {})  # the provider's own wait, in the worker
