"""The chaos harness (`make chaos`): the demo migration on the production-shaped deployment under a seeded
nemesis, judged by an independent checker. See chaos/run.py and docs/chaos.md."""
