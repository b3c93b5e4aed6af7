"""Helpers of the deploy-recipe tests: the recipes' job invocations, the real CLI parser, a cron-expression
checker, DNS-1035 names, our own JSON schemas of the Kubeflow Spark operator's resources and
the operator's CRD schemas made strict (a copy of kubeflow/spark-operator v2.5.2's CRDs ships in
spark-operator-crds/; $SPARK_OPERATOR_CRDS names another)."""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(REPO, "deploy")
K8S_MANIFESTS = ("train-sparkapplication.yaml", "refresh-sparkapplication.yaml", "refresh-scheduled.yaml")
DAG_FILE = os.path.join(DEPLOY, "airflow", "spark_topics_refresh.py")
CRON_FILE = os.path.join(DEPLOY, "cron", "spark-topics-refresh.cron")
IMAGE_ROOT = "/opt/spark-topics"         # where deploy/k8s/Dockerfile puts the code
ENV_PYTHON = "./environment/bin/python"  # the packed env's python inside --archives ...#environment


def has_job(job: str) -> bool:
    return os.path.isfile(os.path.join(REPO, "jobs", f"{job}.py"))


# ---------------------------------------------------------------------------------------------- the CLI
def parse_job(job: str, args: list[str]) -> argparse.Namespace:
    """``spark-topics JOB ARGS`` parsed by the real parser (``jobs.cli.build_parser``), strictly: an unknown
    flag, a missing required one, a bad value or an abbreviated flag (which a later flag could make
    ambiguous) raises AssertionError with argparse's message."""
    from jobs.cli import build_parser

    assert all(isinstance(a, str) for a in args), f"non-string arguments: {args!r}"
    argv = [job, *args]
    parser = build_parser(only=job, argv=argv)
    for action in parser._subparsers._group_actions:
        for subparser in action.choices.values():
            subparser.allow_abbrev = False
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(argv)
    except SystemExit:
        raise AssertionError(f"spark-topics {shlex.join(argv)}: {err.getvalue().strip().splitlines()[-1]}") \
            from None


# ----------------------------------------------------------------------------------- cron expressions
_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_MONTHS = {m: i + 1 for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {d: i for i, d in enumerate("sun mon tue wed thu fri sat".split())}
_GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def cron_problems(expression: str, flavour: str = "robfig") -> list[str]:
    """What is wrong with a cron schedule ([] = valid).

    ``robfig``: what the Spark operator accepts (robfig/cron ``ParseStandard``: 5 fields, ``?`` as ``*``,
    the descriptors and ``@every <Go duration>``; days of week 0-6). ``vixie``: a crontab(5) line's time
    fields (days of week 0-7, ``@reboot``, no ``?``, no ``@every``)."""
    expression = expression.strip()
    if expression.startswith("@"):
        if expression in _DESCRIPTORS or (flavour == "vixie" and expression == "@reboot"):
            return []
        every = expression.split(None, 1)
        if flavour == "robfig" and every[0] == "@every" and len(every) == 2 and _GO_DURATION.match(every[1]):
            return []
        return [f"unknown descriptor {expression!r}"]
    fields = expression.split()
    if len(fields) != 5:
        return [f"{len(fields)} fields, expected 5 (minute hour day-of-month month day-of-week)"]
    bounds = [("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}),
              ("month", 1, 12, _MONTHS), ("day of week", 0, 7 if flavour == "vixie" else 6, _DAYS)]
    problems = []
    for text, (name, low, high, names) in zip(fields, bounds):
        for part in text.split(","):
            problem = _cron_range_problem(part, low, high, names, flavour)
            if problem:
                problems.append(f"{name} {text!r}: {problem}")
    return problems


def _cron_range_problem(part: str, low: int, high: int, names: dict, flavour: str) -> str | None:
    body, _, step = part.partition("/")
    if step and not (step.isdigit() and int(step) > 0):
        return f"bad step {step!r}"

    def value(token):
        if token.isdigit():
            return int(token)
        return names.get(token.lower())

    if body == "*" or (body == "?" and flavour == "robfig"):
        return None
    start, dash, end = body.partition("-")
    a, b = value(start), value(end) if dash else None
    if a is None or (dash and b is None):
        return f"not a number or a name: {part!r}"
    if not low <= a <= high or (b is not None and not low <= b <= high):
        return f"out of range {low}-{high}"
    if b is not None and b < a:
        return f"range {a}-{b} runs backwards"
    return None


# ------------------------------------------------------------------------------------------- k8s names
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def dns1035_problems(name) -> list[str]:
    """Kubernetes IsDNS1035Label: what the operator's webhooks check of every resource name."""
    if not isinstance(name, str) or not _DNS1035.match(name):
        return [f"{name!r} is not a DNS-1035 label (lower-case letters, digits and '-', starting with a letter)"]
    if len(name) > 63:
        return [f"{name!r} is longer than 63 characters"]
    return []


#: a ScheduledSparkApplication's runs are SparkApplications named NAME-<UnixNano>: 19 more digits and a '-'
SCHEDULED_RUN_SUFFIX = "-" + "9" * 19

#: the values the operator's controller acts on (shouldStartNextRun); the CRD itself has no enum
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")


# --------------------------------------------------------------------- our schema of the operator's kinds
# Written from the CRDs (sparkoperator.k8s.io/v1beta2, kubeflow/spark-operator charts/spark-operator-chart/crds):
# the required fields, the enums and the types of the fields our manifests use, every object closed
# (additionalProperties: false). A manifest that uses a further field needs it added here, with its type from
# the CRD. Stricter than the CRD where the controller is: concurrencyPolicy and imagePullPolicy are enums, and
# apiVersion/kind are fixed.
def _obj(properties: dict, required=()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_STR = {"type": "string"}
_STRS = {"type": "array", "items": _STR}
_STR_MAP = {"type": "object", "additionalProperties": _STR}
_BOOL = {"type": "boolean"}
_INT = {"type": "integer"}
_POSITIVE = {"type": "integer", "minimum": 1}
_SECURITY_CONTEXT = _obj({
    "runAsUser": _INT, "runAsGroup": _INT, "runAsNonRoot": _BOOL, "allowPrivilegeEscalation": _BOOL,
    "readOnlyRootFilesystem": _BOOL, "privileged": _BOOL,
    "capabilities": _obj({"add": _STRS, "drop": _STRS}),
    "seccompProfile": _obj({"type": _STR, "localhostProfile": _STR}, ["type"]),
})
_POD = {
    "cores": _POSITIVE, "coreLimit": _STR, "coreRequest": _STR, "memory": _STR, "memoryOverhead": _STR,
    "serviceAccount": _STR, "labels": _STR_MAP, "annotations": _STR_MAP, "envVars": _STR_MAP,
    "env": {"type": "array", "items": _obj({"name": _STR, "value": _STR}, ["name"])},
    "javaOptions": _STR, "nodeSelector": _STR_MAP, "securityContext": _SECURITY_CONTEXT,
    "volumeMounts": {"type": "array", "items": _obj({"name": _STR, "mountPath": _STR, "readOnly": _BOOL,
                                                     "subPath": _STR}, ["mountPath", "name"])},
}
_APP_SPEC = _obj({
    "type": {"enum": ["Java", "Python", "Scala", "R"]},
    "mode": {"enum": ["cluster", "client"]},
    "pythonVersion": {"enum": ["2", "3"]},
    "image": _STR,
    "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
    "mainApplicationFile": _STR,
    "mainClass": _STR,
    "arguments": _STRS,
    "sparkVersion": _STR,
    "sparkConf": _STR_MAP,
    "hadoopConf": _STR_MAP,
    "deps": _obj({k: _STRS for k in ("jars", "files", "pyFiles", "packages", "excludePackages", "repositories",
                                     "archives")}),
    "restartPolicy": _obj({"type": {"enum": ["Never", "Always", "OnFailure"]},
                           "onFailureRetries": {"type": "integer", "minimum": 0},
                           "onFailureRetryInterval": _POSITIVE,
                           "onSubmissionFailureRetries": {"type": "integer", "minimum": 0},
                           "onSubmissionFailureRetryInterval": _POSITIVE}),
    "timeToLiveSeconds": _INT,
    "failureRetries": _INT,
    "retryInterval": _INT,
    "nodeSelector": _STR_MAP,
    "volumes": {"type": "array", "items": _obj({
        "name": _STR,
        "persistentVolumeClaim": _obj({"claimName": _STR, "readOnly": _BOOL}, ["claimName"]),
        "emptyDir": _obj({"medium": _STR, "sizeLimit": _STR}),
    }, ["name"])},
    "driver": _obj(_POD),
    "executor": _obj({**_POD, "instances": _POSITIVE, "deleteOnTermination": _BOOL}),
}, ["driver", "executor", "mainApplicationFile", "sparkVersion", "type"])
_METADATA = _obj({"name": _STR, "namespace": _STR, "labels": _STR_MAP, "annotations": _STR_MAP}, ["name"])
API_VERSION = "sparkoperator.k8s.io/v1beta2"

OUR_SCHEMAS = {
    "SparkApplication": _obj({
        "apiVersion": {"const": API_VERSION}, "kind": {"const": "SparkApplication"},
        "metadata": _METADATA, "spec": _APP_SPEC,
    }, ["apiVersion", "kind", "metadata", "spec"]),
    "ScheduledSparkApplication": _obj({
        "apiVersion": {"const": API_VERSION}, "kind": {"const": "ScheduledSparkApplication"},
        "metadata": _METADATA,
        "spec": _obj({
            "schedule": _STR, "timeZone": _STR, "suspend": _BOOL,
            "concurrencyPolicy": {"enum": list(CONCURRENCY_POLICIES)},
            "successfulRunHistoryLimit": {"type": "integer", "minimum": 0},
            "failedRunHistoryLimit": {"type": "integer", "minimum": 0},
            "template": _APP_SPEC,
        }, ["schedule", "template", "concurrencyPolicy"]),
    }, ["apiVersion", "kind", "metadata", "spec"]),
}


def schema_errors(schema: dict, document) -> list[str]:
    """Every violation, as 'path: message' lines."""
    from jsonschema import Draft7Validator

    return sorted(f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                  for e in Draft7Validator(schema).iter_errors(document))


# ------------------------------------------------------------------------------- the operator's CRDs
CRD_FILES = {"SparkApplication": "sparkoperator.k8s.io_sparkapplications.yaml",
             "ScheduledSparkApplication": "sparkoperator.k8s.io_scheduledsparkapplications.yaml"}
CRD_PATH_IN_REPO = "charts/spark-operator-chart/crds"
#: the CRDs of kubeflow/spark-operator v2.5.2, shipped beside the tests (Apache-2.0; source and checksums in
#: its README.md)
SHIPPED_CRDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spark-operator-crds")
SHIPPED_CRDS_VERSION = "kubeflow/spark-operator v2.5.2"


def find_crds() -> tuple[str, str]:
    """The directory holding both CRD files and what it is: $SPARK_OPERATOR_CRDS when set (another operator
    version, its ``charts/spark-operator-chart/crds``), else the copy shipped in tests/deploy/. A directory
    that lacks a file is an error, not a reason to skip the check."""
    given = os.environ.get("SPARK_OPERATOR_CRDS")
    folder, source = (given, f"SPARK_OPERATOR_CRDS={given}") if given else (SHIPPED_CRDS, SHIPPED_CRDS_VERSION)
    missing = [f for f in CRD_FILES.values() if not os.path.isfile(os.path.join(folder, f))]
    if missing:
        raise FileNotFoundError(f"{source}: {folder} lacks {', '.join(missing)} ({CRD_PATH_IN_REPO} of "
                                "kubeflow/spark-operator)")
    return folder, source


def load_crd_schema(path: str) -> dict:
    """The v1beta2 openAPIV3Schema of a CRD file, made strict as kubeconform's openapi2jsonschema does (and
    kubectl's validation): every object that lists properties admits no others, unless it is marked
    x-kubernetes-preserve-unknown-fields; here the root too."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path) as f:
        crd = yaml.load(f, Loader=loader)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    return _closed(version["schema"]["openAPIV3Schema"])


def _closed(node):
    if isinstance(node, dict):
        node = {k: _closed(v) for k, v in node.items()}
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_closed(v) for v in node]
    return node


def load_yaml(path: str):
    import yaml

    with open(path) as f:
        return yaml.safe_load(f)


# --------------------------------------------------------------------------------- the cron recipe
def read_crontab(path: str = CRON_FILE) -> tuple[dict, list[tuple[str, str]]]:
    """(environment assignments, [(time fields, command)]) of a crontab(5) file."""
    assignments, jobs = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$", line)
            if m:
                assignments[m.group(1)] = m.group(2)
                continue
            if line.startswith("@"):
                when, command = line.split(None, 1)
            else:
                parts = line.split(None, 5)
                assert len(parts) == 6, f"not 5 time fields and a command: {line!r}"
                when, command = " ".join(parts[:5]), parts[5]
            jobs.append((when, command))
    return assignments, jobs


# ------------------------------------------------------------------------ every recipe's invocations
_SUBMIT_OPTIONS_WITH_VALUE = {"--master", "--deploy-mode", "--env-archive", "--spark-arg", "--queue", "--name"}
_SUBMIT_FLAGS = {"--env", "--print-command"}


def split_submit_script(argv: list[str]) -> tuple[str, list[str]]:
    """``deploy/submit*.sh [options] JOB flags...`` (argv after the script) -> (JOB, flags)."""
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] in _SUBMIT_OPTIONS_WITH_VALUE:
            i += 2
        elif argv[i] in _SUBMIT_FLAGS:
            i += 1
        else:
            raise AssertionError(f"unknown submit-script option {argv[i]!r} in {argv!r}")
    assert i < len(argv), f"no job in {argv!r}"
    return argv[i], argv[i + 1:]


def script_examples() -> list[tuple[str, list[str]]]:
    """The example command lines in the deploy scripts' header comments: [(script, argv after it)]."""
    out = []
    for script in ("submit.sh", "submit-yarn.sh"):
        with open(os.path.join(DEPLOY, script)) as f:
            for line in f:
                m = re.match(rf"^#\s+deploy/{re.escape(script)}\s+(.*\S)\s*$", line)
                if m and "[" not in m.group(1):   # usage lines show [options]; examples do not
                    out.append((script, shlex.split(m.group(1))))
    return out


def cron_invocation(env: dict | None = None) -> tuple[str, list[str]]:
    """The cron line's spark-topics job and flags, its $VARIABLES taken from the crontab's assignments."""
    assignments, jobs = read_crontab()
    values = {**assignments, **(env or {})}
    (_, command), = jobs
    words = shlex.split(command.split(">>")[0])
    words = [re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], w) for w in words]
    submit = next(i for i, w in enumerate(words) if w.endswith("/deploy/submit.sh"))
    return split_submit_script(words[submit + 1:])


def manifest_invocations() -> list[tuple[str, str, list[str]]]:
    """(manifest, job, arguments) of every k8s manifest; the job from mainApplicationFile."""
    out = []
    for name in K8S_MANIFESTS:
        doc = load_yaml(os.path.join(DEPLOY, "k8s", name))
        spec = doc["spec"].get("template", doc["spec"])
        main = spec["mainApplicationFile"]
        m = re.match(rf"^local://{re.escape(IMAGE_ROOT)}/jobs/([a-z_]+)\.py$", main)
        assert m, f"{name}: mainApplicationFile {main!r} is not local://{IMAGE_ROOT}/jobs/<job>.py"
        out.append((name, m.group(1), list(spec.get("arguments", []))))
    return out


def scratch_dir() -> str:
    return tempfile.mkdtemp(prefix="spark-topics-deploy-")
