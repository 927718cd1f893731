"""The test bed's jars: resolved by Maven from the repository's `pom.xml` into a cache on first use, then read
from a class path file; the one-file Java launcher compiled against them with javac.

Cache layout (`REALHBASE_CACHE`, default `~/.cache/realhbase`):
    m2/                               Maven's local repository (every jar; ~210 MB)
    <hbase version>/classpath.txt     `mvn dependency:build-classpath` output, keyed by the pom's content
    <hbase version>/classpath.key
    <hbase version>/launcher-<hash>/  launcher.jar (RealHBaseLauncher), one directory per source
    <hbase version>/versions.json     the versions the pom resolved (hbase, hadoop, thrift, shell, jruby)
    yarn-<hadoop version>/classpath.txt   YARN's ResourceManager and NodeManager (realhbase/yarn/pom.xml), keyed
                                      by that pom's content (`up --yarn` only)

`REALHBASE_VERSION` picks another HBase (e.g. 2.5.13-hadoop3, 3.0.0-alpha-4); its Hadoop is read from that
release's hbase-server pom unless `REALHBASE_HADOOP_VERSION` says it. An HBase 3.x takes the pom's `hbase3.*`
shell and Thrift gateway versions (the 2.4 shell cannot load on 3.x's client: `companions`). Only the pom's
defaults and 3.0.0-alpha-4 are tested.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POM = REPO / "pom.xml"
LAUNCHER_SOURCE = Path(__file__).resolve().parent / "java" / "RealHBaseLauncher.java"
MAVEN_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class RealHBaseError(RuntimeError):
    """Something the test bed needs is missing or failed; the message says what and where to look."""


@dataclass(frozen=True)
class Jars:
    classpath: list[str]       # every jar, in Maven's order
    launcher_dir: Path         # holds launcher.jar (RealHBaseLauncher) and the empty webapps/ HDFS needs
    versions: dict             # {"hbase": ..., "hadoop": ..., "hbase-thrift": ..., "hbase-shell": ..., "jruby": ...}
    java: str                  # the java executable
    shell_extra: list[str]     # appended to the shell's class path only (pom.xml's shell.compat.artifacts)
    cds_dir: Path              # class data sharing archives for exactly these jars (realhbase/cds.py)


def cache_dir() -> Path:
    return Path(os.environ.get("REALHBASE_CACHE") or Path.home() / ".cache" / "realhbase")


def pom_properties(pom: Path = POM) -> dict[str, str]:
    root = ET.parse(pom).getroot()
    props = root.find("m:properties", MAVEN_NS)
    return {child.tag.split("}")[1]: (child.text or "").strip() for child in props}


def tool(name: str, hint: str) -> str:
    """The path of `name` (JAVA_HOME's for java/javac), or a one-line error naming it."""
    java_home = os.environ.get("JAVA_HOME")
    if name in ("java", "javac") and java_home and (Path(java_home) / "bin" / name).exists():
        return str(Path(java_home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise RealHBaseError(f"realhbase: `{name}` not found on PATH ({hint})")
    return found


def hbase_version() -> str:
    return os.environ.get("REALHBASE_VERSION") or pom_properties()["hbase.version"]


def companions(version: str, props: dict[str, str] | None = None) -> dict:
    """The hbase-shell and hbase-thrift versions and the shell-only compat artifacts that go with HBase `version`:
    the pom's defaults, or for a 3.x its `hbase3.shell.version` / `hbase3.thrift.version` and no compat jars (the
    2.4 shell's Ruby names HColumnDescriptor, which 3.0 removed: it dies as it loads; the HTrace jars are for 2.4's
    `trace` command only)."""
    props = props or pom_properties()
    if version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 3:
        return {"shell": props["hbase3.shell.version"], "thrift": props["hbase3.thrift.version"], "compat": []}
    return {"shell": props["hbase.shell.version"], "thrift": props["hbase.thrift.version"],
            "compat": [a for a in props["shell.compat.artifacts"].split(",") if a.strip()]}


def _mvn(args: list[str], what: str, progress: bool, pom: Path = POM) -> str:
    """Run Maven in batch mode; its output goes to stderr as it comes (download progress) when `progress`.
    A failure raises one line naming the artifact Maven could not get."""
    mvn = tool("mvn", "install Maven 3.8+: apt-get install maven")
    cmd = [mvn, "-B", "-f", str(pom), f"-Dmaven.repo.local={cache_dir() / 'm2'}", *args]
    repo_url = os.environ.get("REALHBASE_MAVEN_REPOSITORY")
    if repo_url:
        cmd.append(f"-Drealhbase.repository={repo_url}")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO),
                            env={**os.environ, "MAVEN_OPTS": os.environ.get("MAVEN_OPTS", "-Xmx512m")})
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if progress and line.startswith("[INFO] Download"):
            sys.stderr.write("realhbase: mvn " + line.replace("[INFO] ", ""))
    if proc.wait() != 0:
        raise RealHBaseError(f"realhbase: resolving {what} with Maven failed: {maven_error(''.join(lines))}")
    return "".join(lines)


def maven_error(output: str) -> str:
    """The gist of a failed Maven run, on one line: the artifact it could not get and why."""
    for pattern in (r"Could not find artifact (\S+)", r"Could not transfer artifact (\S+) from/to \S+ \(([^)]*)\): "
                    r"([^\n]*)", r"Plugin (\S+) or one of its dependencies could not be resolved",
                    r"Failed to read artifact descriptor for (\S+)", r"could not be resolved: (\S+)"):
        m = re.search(pattern, output)
        if m:
            artifact = m.group(1).rstrip(":,")
            reason = "not found in the repository" if "find" in pattern else "repository unreachable"
            if m.lastindex and m.lastindex >= 3:
                reason = f"repository {m.group(2)} unreachable: {m.group(3).strip()}"
            return f"{artifact}: {reason}".replace(" -> [Help 1]", "")
    errors = [line.replace("[ERROR] ", "").strip() for line in output.splitlines() if line.startswith("[ERROR]")]
    return errors[0] if errors else output.strip().splitlines()[-1] if output.strip() else "no output"


def _hadoop_for(version: str, progress: bool) -> str:
    """The Hadoop version `version`'s hbase-server was built with (its published pom's hadoop-common)."""
    if os.environ.get("REALHBASE_HADOOP_VERSION"):
        return os.environ["REALHBASE_HADOOP_VERSION"]
    props = pom_properties()
    if version == props["hbase.version"]:
        return props["hadoop.version"]
    _mvn(["dependency:get", f"-Dartifact=org.apache.hbase:hbase-server:{version}:pom", "-Dtransitive=false"],
         f"org.apache.hbase:hbase-server:{version}:pom", progress)
    pom = cache_dir() / "m2" / "org" / "apache" / "hbase" / "hbase-server" / version / f"hbase-server-{version}.pom"
    m = re.search(r"<artifactId>hadoop-common</artifactId>\s*<version>([^<$]+)</version>", pom.read_text())
    if not m:
        raise RealHBaseError(f"realhbase: cannot tell which Hadoop hbase-server {version} was built with ({pom}); "
                             "set REALHBASE_HADOOP_VERSION")
    return m.group(1)


def resolve(progress: bool = True) -> Jars:
    """The class path for the selected version: from the cache, or resolved by Maven now (once)."""
    java = tool("java", "install a JDK 17: apt-get install openjdk-17-jdk-headless")
    version = hbase_version()
    vdir = cache_dir() / version
    key = hashlib.sha256(POM.read_bytes() + version.encode()
                         + os.environ.get("REALHBASE_HADOOP_VERSION", "").encode()).hexdigest()
    cp_file, key_file, versions_file = vdir / "classpath.txt", vdir / "classpath.key", vdir / "versions.json"
    classpath = None
    if cp_file.exists() and key_file.exists() and key_file.read_text() == key:
        classpath = cp_file.read_text().strip().split(os.pathsep)
        if not all(os.path.exists(j) for j in classpath):
            classpath = None  # the Maven cache was pruned: resolve again
    if classpath is None:
        vdir.mkdir(parents=True, exist_ok=True)
        if progress:
            print(f"realhbase: resolving HBase {version}'s jars with Maven into {cache_dir() / 'm2'} "
                  "(first use only)", file=sys.stderr)
        hadoop = _hadoop_for(version, progress)
        props = pom_properties()
        with_it = companions(version, props)
        _mvn(["dependency:build-classpath", f"-Dhbase.version={version}", f"-Dhadoop.version={hadoop}",
              f"-Dhbase.shell.version={with_it['shell']}", f"-Dhbase.thrift.version={with_it['thrift']}",
              f"-Dmdep.outputFile={cp_file}"], f"HBase {version} (Hadoop {hadoop})", progress)
        classpath = cp_file.read_text().strip().split(os.pathsep)
        shell_extra = [_single_artifact(a, progress) for a in with_it["compat"]]
        versions_file.write_text(json.dumps({
            "hbase": version, "hadoop": hadoop, "hbase-thrift": with_it["thrift"],
            "hbase-shell": with_it["shell"], "jruby": props["jruby.version"],
            "shell-compat": with_it["compat"]}, indent=1))
        (vdir / "shell-extra.txt").write_text(os.pathsep.join(shell_extra))
        key_file.write_text(key)
    shell_extra = [j for j in (vdir / "shell-extra.txt").read_text().split(os.pathsep) if j]
    launcher = _launcher(classpath, vdir)
    cds_key = hashlib.sha256(os.pathsep.join([java, *classpath, *shell_extra, str(launcher)]).encode()).hexdigest()[:16]
    return Jars(classpath, launcher, json.loads(versions_file.read_text()), java, shell_extra, vdir / "cds" / cds_key)


JVM_DIR = REPO / "jvm"


def build_jvm(progress: bool = True) -> Path:
    """The toolkit's native data path (jvm/: its Java, built by Maven) for the selected HBase: built into
    jvm/target/<version>/ (hbase-migration-jvm.jar and dependencies.txt, the HBase client jars it ships with) against
    the same HBase and Hadoop versions, from the same Maven repository, as the test bed's class path; again only when
    the pom, a source or the version changes. Its unit tests run as part of the build. Returns that directory."""
    version = hbase_version()
    hadoop = _hadoop_for(version, progress)
    out = JVM_DIR / "target" / version
    digest = hashlib.sha256(version.encode() + hadoop.encode())
    for path in sorted([JVM_DIR / "pom.xml", *(JVM_DIR / "src").rglob("*.java")]):
        digest.update(str(path.relative_to(JVM_DIR)).encode() + b"\0" + path.read_bytes())
    key = digest.hexdigest()
    stamp = out / "build.key"
    done = [out / "hbase-migration-jvm.jar", out / "dependencies.txt"]
    if stamp.exists() and stamp.read_text() == key and all(p.exists() for p in done) and all(
            os.path.exists(j) for j in (out / "dependencies.txt").read_text().strip().split(os.pathsep) if j):
        return out
    if progress:
        print(f"realhbase: building the native data path (jvm/) for HBase {version} with Maven", file=sys.stderr)
    _mvn(["package", f"-Dhbase.version={version}", f"-Dhadoop.version={hadoop}", "-Dsurefire.printSummary=false"],
         f"the native data path (jvm/) for HBase {version}", progress, pom=JVM_DIR / "pom.xml")
    stamp.write_text(key)
    return out


def mapreduce_jars(progress: bool = True) -> list[str]:
    """What HBase's own MapReduce tools (CopyTable, VerifyReplication: the benchmarks' baselines) need beyond the
    test bed's class path: hbase-mapreduce at the selected HBase (or its plain build when the registry serves no
    `-hadoop3` one: the same classes, HBase's jars of the class path serve it) and Hadoop's local job runner
    (hadoop-mapreduce-client-common), each alone, without dependencies."""
    jars = resolve(progress)
    version = jars.versions["hbase"]

    def cached(coordinates: str) -> str | None:
        group, artifact, v = coordinates.split(":")
        path = cache_dir() / "m2" / Path(*group.split(".")) / artifact / v / f"{artifact}-{v}.jar"
        return str(path) if path.is_file() else None

    def fetched(*choices: str) -> str:
        """The first of `choices` Maven's cache holds, else the first the registry serves."""
        for coordinates in choices:
            if cached(coordinates):
                return cached(coordinates)
        for coordinates in choices:
            try:
                return _single_artifact(coordinates, progress)
            except RealHBaseError:
                if coordinates == choices[-1]:
                    raise
        raise AssertionError("unreachable")

    versions = dict.fromkeys([version, version.removesuffix("-hadoop3")])
    return [fetched(*(f"org.apache.hbase:hbase-mapreduce:{v}" for v in versions)),
            fetched(f"org.apache.hadoop:hadoop-mapreduce-client-common:{jars.versions['hadoop']}")]


YARN_POM = Path(__file__).resolve().parent / "yarn" / "pom.xml"


def resolve_yarn(hadoop: str, progress: bool = True) -> list[str]:
    """The class path of YARN's ResourceManager and NodeManager at Hadoop `hadoop` (realhbase/yarn/pom.xml), from
    the cache or resolved by Maven now (once; about 40 jars beyond what the HBase test bed already fetched). Kept
    apart from HBase's class path: YARN's servers bring Guice, Jersey 1 and their own web stack."""
    vdir = cache_dir() / f"yarn-{hadoop}"
    key = hashlib.sha256(YARN_POM.read_bytes() + hadoop.encode()).hexdigest()
    cp_file, key_file = vdir / "classpath.txt", vdir / "classpath.key"
    if cp_file.exists() and key_file.exists() and key_file.read_text() == key:
        classpath = cp_file.read_text().strip().split(os.pathsep)
        if all(os.path.exists(j) for j in classpath):
            return classpath
    vdir.mkdir(parents=True, exist_ok=True)
    if progress:
        print(f"realhbase: resolving YARN {hadoop}'s jars with Maven into {cache_dir() / 'm2'} (first use only)",
              file=sys.stderr)
    _mvn(["dependency:build-classpath", f"-Dhadoop.version={hadoop}", f"-Dmdep.outputFile={cp_file}"],
         f"YARN (Hadoop {hadoop})", progress, pom=YARN_POM)
    key_file.write_text(key)
    return cp_file.read_text().strip().split(os.pathsep)


def _single_artifact(coordinates: str, progress: bool) -> str:
    """One jar without its dependencies (group:artifact:version), fetched into the Maven cache; its path."""
    group, artifact, version = coordinates.strip().split(":")
    _mvn(["dependency:get", f"-Dartifact={group}:{artifact}:{version}", "-Dtransitive=false"], coordinates, progress)
    return str(cache_dir() / "m2" / Path(*group.split(".")) / artifact / version / f"{artifact}-{version}.jar")


def _launcher(classpath: list[str], vdir: Path) -> Path:
    """RealHBaseLauncher compiled against these jars, in a directory of its source's own (checkouts with different
    launchers share the cache: one must never replace the jar another's running JVMs load classes from)."""
    source = LAUNCHER_SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()
    out = vdir / f"launcher-{digest[:12]}"
    stamp = out / "source.sha256"
    # hadoop-hdfs's jar as served here has no webapps/: the NameNode's and DataNode's HTTP servers only need
    # the directories to exist (WebHDFS, /jmx and /conf are servlets they add themselves).
    for app in ("hdfs", "datanode", "static"):
        (out / "webapps" / app).mkdir(parents=True, exist_ok=True)
    if stamp.exists() and stamp.read_text() == digest and (out / "launcher.jar").exists():
        return out
    javac = tool("javac", "install a JDK 17 (not only a JRE): apt-get install openjdk-17-jdk-headless")
    (out / "launcher.jar").unlink(missing_ok=True)
    proc = subprocess.run([javac, "-nowarn", "-d", str(out), "-cp", os.pathsep.join(classpath), str(LAUNCHER_SOURCE)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RealHBaseError(f"realhbase: javac failed on {LAUNCHER_SOURCE}: "
                             f"{(proc.stderr or proc.stdout).strip().splitlines()[0]}")
    # a jar, not a directory of classes: a class data sharing archive cannot hold classes from a directory
    with zipfile.ZipFile(out / "launcher.jar", "w") as jar:
        for cls in sorted(out.glob("RealHBaseLauncher*.class")):
            jar.write(cls, cls.name)
            cls.unlink()
    stamp.write_text(digest)
    return out
