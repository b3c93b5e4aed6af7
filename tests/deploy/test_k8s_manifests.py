"""deploy/k8s/: the Kubeflow Spark operator manifests (SparkApplication, ScheduledSparkApplication) validated
without a cluster: against our own schema of the operator's kinds (always), against the operator's CRDs made
strict like kubeconform (the copy in spark-operator-crds/, or $SPARK_OPERATOR_CRDS), plus
what neither schema checks: concurrencyPolicy, the cron schedule, DNS-1035 names, the entry point in the image
and the job's flags through the real parser."""
from __future__ import annotations

import copy
import os
import re
import zoneinfo

import pytest

from deploy_recipes import (API_VERSION, CONCURRENCY_POLICIES, CRD_FILES, DEPLOY, IMAGE_ROOT, K8S_MANIFESTS,
                            OUR_SCHEMAS, REPO, SCHEDULED_RUN_SUFFIX, cron_problems, dns1035_problems, find_crds,
                            has_job, load_crd_schema, load_yaml, manifest_invocations, parse_job, schema_errors)

def manifest(name):
    return load_yaml(os.path.join(DEPLOY, "k8s", name))


def app_spec(doc):
    return doc["spec"]["template"] if doc["kind"] == "ScheduledSparkApplication" else doc["spec"]


def operator_problems(doc) -> list[str]:
    """What the operator would refuse or silently mishandle, beyond any schema."""
    problems = dns1035_problems(doc.get("metadata", {}).get("name"))
    if doc.get("kind") == "ScheduledSparkApplication":
        spec = doc.get("spec", {})
        run = f"{doc['metadata'].get('name')}{SCHEDULED_RUN_SUFFIX}"
        problems += [f"its runs' names: {p}" for p in dns1035_problems(run)]
        policy = spec.get("concurrencyPolicy")
        if policy not in CONCURRENCY_POLICIES:
            problems.append(f"concurrencyPolicy {policy!r} is not one of {', '.join(CONCURRENCY_POLICIES)} "
                            "(the controller never starts another run for any other value)")
        schedule = spec.get("schedule")
        problems += [f"schedule {schedule!r}: {p}" for p in
                     (cron_problems(schedule) if isinstance(schedule, str) else ["not a string"])]
        if "timeZone" in spec:
            try:
                zoneinfo.ZoneInfo(spec["timeZone"])
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                problems.append(f"timeZone {spec['timeZone']!r} is not an IANA time zone")
    return problems


@pytest.fixture(scope="module")
def crd_schemas():
    folder, source = find_crds()
    return {kind: load_crd_schema(os.path.join(folder, file)) for kind, file in CRD_FILES.items()}, source


@pytest.mark.parametrize("name", K8S_MANIFESTS)
def test_manifest_matches_our_schema_and_the_operators_rules(name):
    doc = manifest(name)
    assert doc["apiVersion"] == API_VERSION
    assert schema_errors(OUR_SCHEMAS[doc["kind"]], doc) == []
    assert operator_problems(doc) == []
    spec = app_spec(doc)
    assert (spec["type"], spec["mode"], spec["pythonVersion"]) == ("Python", "cluster", "3")
    if doc["kind"] == "ScheduledSparkApplication":
        assert doc["spec"]["concurrencyPolicy"] == "Forbid"   # a refresh never overlaps the previous one


@pytest.mark.parametrize("name", K8S_MANIFESTS)
def test_manifest_matches_the_operators_crd(name, crd_schemas):
    schemas, source = crd_schemas
    doc = manifest(name)
    assert schema_errors(schemas[doc["kind"]], doc) == [], f"against the CRD from {source}"


@pytest.mark.parametrize("name,job,arguments", [pytest.param(*case, id=case[0]) for case in manifest_invocations()])
def test_manifest_runs_a_real_entry_point_with_flags_the_job_accepts(name, job, arguments):
    assert has_job(job), f"{name}: no jobs/{job}.py"
    args = parse_job(job, arguments)
    assert args.job == job
    # the image puts jobs/ where mainApplicationFile looks for it
    with open(os.path.join(DEPLOY, "k8s", "Dockerfile")) as f:
        dockerfile = f.read()
    assert re.search(rf"^COPY jobs {re.escape(IMAGE_ROOT)}/jobs$", dockerfile, re.M)


def test_scheduled_refresh_runs_the_same_spec_as_the_one_off_refresh():
    scheduled = manifest("refresh-scheduled.yaml")["spec"]["template"]
    assert scheduled == manifest("refresh-sparkapplication.yaml")["spec"]


def test_the_image_carries_the_code_and_pyprojects_dependencies():
    """deploy/k8s/Dockerfile: every package of the project copied to /opt/spark-topics, and its pip list =
    pyproject.toml's dependencies without pyspark (the image's Spark provides it)."""
    import tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    wanted = [d for d in project["project"]["dependencies"] if not re.match(r"pyspark\b", d)]
    with open(os.path.join(DEPLOY, "k8s", "Dockerfile")) as f:
        dockerfile = f.read()
    installs = [line for line in dockerfile.splitlines() if line.startswith("RUN python3 -m pip install")]
    assert re.findall(r'"([^"]+)"', installs[0]) == wanted
    for package in project["tool"]["setuptools"]["packages"]["find"]["include"]:
        package = package.rstrip("*")
        assert re.search(rf"^COPY {package} {IMAGE_ROOT}/{package}$", dockerfile, re.M), package
    spark_versions = {app_spec(manifest(n))["sparkVersion"] for n in K8S_MANIFESTS}
    image = re.search(r"^ARG SPARK_IMAGE=\S+:(\S+)$", dockerfile, re.M).group(1)
    assert spark_versions == {image}, "the manifests' sparkVersion is the Spark of the image"


# ---------------------------------------------------------------------------------- broken manifests
def _broken(change):
    doc = copy.deepcopy(manifest("refresh-scheduled.yaml"))
    change(doc)
    return doc


BROKEN = {
    "concurrencyPolicy Forbidden": lambda d: d["spec"].update(concurrencyPolicy="Forbidden"),
    "no concurrencyPolicy": lambda d: d["spec"].pop("concurrencyPolicy"),
    "type PySpark": lambda d: d["spec"]["template"].update(type="PySpark"),
    "deps.pyFile (typo)": lambda d: d["spec"]["template"].update(deps={"pyFile": ["x.zip"]}),
    "no schedule": lambda d: d["spec"].pop("schedule"),
    "schedule hour 25": lambda d: d["spec"].update(schedule="17 25 * * *"),
    "schedule with 6 fields": lambda d: d["spec"].update(schedule="0 17 2 * * *"),
    "schedule every 3m without @": lambda d: d["spec"].update(schedule="every 3m"),
    "name with capitals": lambda d: d["metadata"].update(name="Spark-Topics-Refresh"),
    "name too long for its runs": lambda d: d["metadata"].update(name="spark-topics-refresh-" + "x" * 30),
    "an integer argument": lambda d: d["spec"]["template"]["arguments"].extend(["--keep", 30]),
    "executor instances 0": lambda d: d["spec"]["template"]["executor"].update(instances=0),
    "mode Cluster": lambda d: d["spec"]["template"].update(mode="Cluster"),
    "restartPolicy never": lambda d: d["spec"]["template"]["restartPolicy"].update(type="never"),
    "pythonVersion 3 as a number": lambda d: d["spec"]["template"].update(pythonVersion=3),
    "timeZone UTC+2": lambda d: d["spec"].update(timeZone="UTC+2"),
}


@pytest.mark.parametrize("what", list(BROKEN))
def test_a_broken_manifest_is_refused(what, crd_schemas):
    doc = _broken(BROKEN[what])
    ours = schema_errors(OUR_SCHEMAS[doc["kind"]], doc) + operator_problems(doc)
    assert ours, f"{what}: accepted"
    schemas, _ = crd_schemas
    crd = schema_errors(schemas[doc["kind"]], doc)
    # the CRD alone lets these through, which is why the checks above exist
    crd_blind = {"concurrencyPolicy Forbidden", "no concurrencyPolicy", "schedule hour 25",
                 "schedule with 6 fields", "schedule every 3m without @", "name with capitals",
                 "name too long for its runs", "timeZone UTC+2"}
    assert bool(crd) != (what in crd_blind), (what, crd)


@pytest.mark.parametrize("wrong", ["--topcs", "--topic"])
def test_a_job_flag_typo_or_abbreviation_in_a_manifest_is_refused(wrong):
    doc = manifest("train-sparkapplication.yaml")
    arguments = [(wrong if a == "--topics" else a) for a in doc["spec"]["arguments"]]
    with pytest.raises(AssertionError, match="--topics"):
        parse_job("train", arguments)


@pytest.mark.parametrize("expression,flavour,ok", [
    ("17 2 * * *", "robfig", True), ("*/15 0-6,22 1 JAN-mar mon-fri", "robfig", True), ("@daily", "robfig", True),
    ("@every 3m", "robfig", True), ("@every 1h30m", "robfig", True), ("0 0 ? * *", "robfig", True),
    ("0 0 * * 7", "robfig", False), ("0 0 * * 7", "vixie", True), ("@reboot", "vixie", True),
    ("@reboot", "robfig", False), ("@every 3", "robfig", False), ("60 * * * *", "robfig", False),
    ("0 0 0 * *", "robfig", False), ("0 0 * 13 *", "robfig", False), ("5-1 * * * *", "robfig", False),
    ("*/0 * * * *", "robfig", False), ("0 0 * * * *", "robfig", False), ("0 0 ? * *", "vixie", False),
    ("@every 3m", "vixie", False), ("0 0 * foo *", "robfig", False),
])
def test_cron_checker(expression, flavour, ok):
    assert (cron_problems(expression, flavour) == []) == ok, cron_problems(expression, flavour)
