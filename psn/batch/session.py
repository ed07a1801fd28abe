"""One local Spark session per process, configured for small iterative batch jobs.

Role: start (or reuse) the :class:`pyspark.sql.SparkSession` that the Spark reference
evaluator (:mod:`psn.batch.spark`) runs on. By default it is a local session
(``local[*]``) tuned for these jobs: web UI off, 2 shuffle partitions,
adaptive execution off, quiet logs (level ERROR, no startup banner or progress bars),
bound to 127.0.0.1 so it needs no network, a fast-starting JVM (C1-only JIT, no
whole-stage code generation; ``PSN_SPARK_JIT=full`` turns both back on for long jobs), and
Python workers (the few UDFs of ``sum``/``avg`` and ``f_dist``) on this process's interpreter unless
``PYSPARK_PYTHON`` says otherwise. The JVM's error stream is passed on without the
"Using incubator modules" line it prints on start (Spark's launcher adds that module, and no
JVM option silences it). Any Spark cluster can be used instead by giving its master URL.

Ctrl-C and SIGTERM are held back while the session starts and acted on once it has: an
interrupt in the middle left the JVM running. A second Ctrl-C acts at once (a way out of a
start-up that hangs). Ctrl-C keeps the handler it had before the session, rather than
PySpark's own: that one cancels the running jobs by a call into the JVM from inside the
handler, which printed Python tracebacks when the interrupted code was itself in such a
call.

Deliberately not here: evaluation (see :mod:`psn.batch.spark`), and stopping the session
behind the caller's back: the session lives until :func:`stop_session` or process exit.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
import tempfile
import threading
from pathlib import Path

from ndlog.signals import held

__all__ = ["get_session", "stop_session", "check_master", "check_reachable",
           "DEFAULT_MASTER", "SHUFFLE_PARTITIONS"]

#: master used when none is given (all local cores; a 2-core machine gets ``local[2]``)
DEFAULT_MASTER = "local[*]"
#: shuffle partitions: 200 (Spark's default) made a 100-node closure 2-10x slower locally
SHUFFLE_PARTITIONS = 2

_LOCK = threading.Lock()
_SESSION = None
_MASTER = None

#: master URLs Spark knows (SparkContext's own patterns, and the cluster managers it ships)
_MASTER_FORMS = re.compile(
    r"local(\[(0*[1-9]\d*|\*)(\s*,\s*\d+)?\])?"     # local[0] runs no thread
    r"|local-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\]"
    r"|spark://\S+|yarn|k8s://\S+|mesos://\S+")

# log4j2 configuration: only errors, to stderr; no "Using Spark's default log4j profile"
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = error
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = off
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.scheduler.name = org.apache.spark.scheduler
logger.scheduler.level = off
"""


def _log4j_file() -> str:
    path = os.path.join(tempfile.gettempdir(), f"psn-spark-log4j2-{os.getuid()}-v6.properties")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(_LOG4J2)
        os.replace(tmp, path)
    return path


def _settings(master: str, local: bool) -> dict[str, str]:
    """The session's Spark settings (master and application name included)."""
    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j_file()}"
    fast = local and os.environ.get("PSN_SPARK_JIT", "fast") != "full"
    if fast:
        # C1-only JIT: these jobs are many small plans in a short-lived JVM; measured on a
        # loaded 2-core machine, session start 33 s -> 11 s and a first 100-node closure
        # 66 s -> 33 s (PSN_SPARK_JIT=full restores the default tiered JIT)
        java_opts += " -XX:TieredStopAtLevel=1"
    settings = {
        "spark.master": master,
        "spark.app.name": "psn-reference",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(SHUFFLE_PARTITIONS),
        # adaptive execution runs every shuffle stage as a job of its own: on the small,
        # many-round plans of semi-naive evaluation that doubled the number of jobs
        "spark.sql.adaptive.enabled": "false",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
    }
    if fast:
        settings["spark.sql.codegen.wholeStage"] = "false"  # fewer Janino compiles
    if local:
        settings.update({"spark.driver.host": "127.0.0.1",
                         "spark.driver.bindAddress": "127.0.0.1",
                         "spark.default.parallelism": str(SHUFFLE_PARTITIONS)})
    return settings


#: what the JVM prints on start because Spark's launcher adds the incubating vector module;
#: no JVM option turns it off, so the JVM's error stream is passed on without this line
_INCUBATOR_WARNING = b"WARNING: Using incubator modules: jdk.incubator.vector"


def _launch_jvm(settings: dict[str, str]) -> None:
    """Start the JVM of the session with ``settings`` as PySpark would, except that its
    error stream goes through :func:`_pass_on_errors` (which drops the incubator
    warning) to this process's standard error."""
    from subprocess import PIPE

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    if SparkContext._gateway is not None:   # a JVM this process started before
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": PIPE})
    if gateway.proc is not None:        # None: a JVM given by PYSPARK_GATEWAY_PORT
        threading.Thread(target=_pass_on_errors, args=(gateway.proc.stderr,), daemon=True,
                         name="psn-spark-stderr").start()
    SparkContext._ensure_initialized(gateway=gateway)


def _pass_on_errors(stream) -> None:
    """Copy the JVM's error stream, line by line, to file descriptor 2 (where the JVM
    would have written it), without :data:`_INCUBATOR_WARNING`; ends with the JVM."""
    with stream:
        for line in stream:
            if line.rstrip() != _INCUBATOR_WARNING:
                os.write(2, line)


def get_session(master: str | None = None):
    """Return this process's Spark session, starting it on first use.

    Parameters
    ----------
    master:
        A Spark master URL (``local[2]``, ``spark://host:7077``, ...). ``None`` means the
        running session if there is one, else :data:`DEFAULT_MASTER`.

    Returns
    -------
    pyspark.sql.SparkSession
        One shared session per process (the reference results are batch jobs; a local
        session costs 4-6 s to start, so it is started once).

    Raises
    ------
    ndlog.errors.InputError
        If a session with a different master is already running in this process, or
        ``master`` is not a master URL.
    ndlog.errors.EvaluationError
        If the session does not start.
    """
    global _SESSION, _MASTER
    if master is not None:
        check_master(master)
    with _LOCK:
        if _SESSION is not None and _SESSION.sparkContext._jsc is not None:
            if master is not None and master != _MASTER:
                from ndlog.errors import InputError
                raise InputError(f"a Spark session on '{_MASTER}' is already running in this "
                                 f"process; cannot switch to '{master}'")
            return _SESSION
        chosen = master or DEFAULT_MASTER
        local = chosen.startswith("local")
        if local:
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            # Python workers default to whatever "python3" is on PATH, which may lack the
            # driver's version (PySpark refuses a mismatch)
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        session = _start(chosen, local)
        session.sparkContext.setLogLevel("ERROR")
        _SESSION, _MASTER = session, chosen
        return session


def check_master(master: str) -> None:
    """Refuse a master URL Spark would not take, before a JVM is started for it (Spark's
    refusal comes as a Java stack trace).

    Raises
    ------
    ndlog.errors.InputError
        Naming ``master``, with the forms Spark takes (a value that is not a string too).
    """
    if not isinstance(master, str) or not _MASTER_FORMS.fullmatch(master):
        from ndlog.errors import InputError
        raise InputError(f"not a Spark master URL: {master!r:.80}",
                         hint="local, local[N] (N >= 1), local[*], spark://HOST:PORT, yarn or "
                              "k8s://HOST:PORT")


def check_reachable(master: str, timeout: float = 5.0) -> None:
    """Refuse a standalone master (``spark://HOST:PORT``, or several separated by commas)
    none of whose hosts accepts a connection within ``timeout`` seconds. Spark itself
    retries for about a minute and then fails with a Java error; other masters are not
    checked.

    Parameters
    ----------
    master:
        A Spark master URL (:func:`check_master` has accepted it).
    timeout:
        Seconds to wait for each host's connection.

    Raises
    ------
    ndlog.errors.InputError
        If a ``HOST:PORT`` is malformed.
    ndlog.errors.EvaluationError
        Naming the master and why each host could not be reached.
    """
    if not master.startswith("spark://"):
        return
    from ndlog.errors import EvaluationError, InputError
    failed = []
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.strip().rpartition(":")
        if not host or not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise InputError(f"not a Spark master URL: {master!r}",
                             hint="spark://HOST:PORT, PORT from 1 to 65535")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return
        except OSError as exc:
            failed.append(f"{hostport.strip()}: {exc.strerror or exc}")
    raise EvaluationError(f"cannot reach the Spark master {master!r} ({'; '.join(failed)})",
                          hint="start the master, correct the URL, or use a local master "
                               "such as local[*]")


def _start(master: str, local: bool):
    """The session on ``master``; a session that does not start is an EvaluationError
    naming the master (a cluster that is not there, no Java)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession
    check_reachable(master)
    _quiet_python_loggers()
    with held(note="psn: stopping once the Spark session has started, so that its JVM is "
                   "not left running (Ctrl-C again stops at once)", again_now=True):
        try:
            settings = _settings(master, local)
            _launch_jvm(settings)
            return SparkSession.builder.config(map=settings).getOrCreate()
        except (PySparkException, Py4JError) as exc:
            from ndlog.errors import EvaluationError
            first = (str(exc).strip().splitlines()[0] if str(exc).strip()
                     else type(exc).__name__)
            raise EvaluationError(f"could not start a Spark session on {master!r}: {first}",
                                  hint="check the master URL, and that Java 17 is "
                                       "installed (java -version)") from exc


class _NotFromPy4J(logging.Filter):
    """Drops what py4j logs on the root logger (an interrupted or failed call into the
    JVM, with its traceback): the call's own exception reaches the caller, which reports
    it (an interrupt as 'psn: interrupted', a failure as a PSN error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "py4j" not in Path(record.pathname).parts


def _quiet_python_loggers() -> None:
    """PySpark logs every failed query's context as JSON on stderr, and py4j logs calls
    into the JVM that an interrupt or a failure cut short; our callers translate those
    failures into PSN errors, so the log is noise."""
    root = logging.getLogger()
    if not any(isinstance(f, _NotFromPy4J) for f in root.filters):
        root.addFilter(_NotFromPy4J())
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # older PySpark: nothing to silence
        return
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def stop_session() -> None:
    """Stop this process's session (if any); the next :func:`get_session` starts anew."""
    global _SESSION, _MASTER
    with _LOCK:
        if _SESSION is not None:
            _SESSION.stop()
        _SESSION, _MASTER = None, None
