"""Glue's data quality API on `sparkmark api`, driven by boto3 and the AWS CLI as
processes a user runs against it: rulesets as resources (Terraform's call sequence for
``aws_glue_data_quality_ruleset`` replayed), ruleset evaluation runs on two catalog
tables with known differences, a rule recommendation run whose ruleset is then
evaluated, results in batches, and cancellation. Every answer is checked against
botocore's model of Glue."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import botocore.session
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore import xform_name
from botocore.exceptions import ClientError
from botocore.validate import ParamValidator

from .test_athena import AWS, AthenaApi

pytestmark = pytest.mark.slow

MODEL = botocore.session.get_session().get_service_model("glue")
RULESET_ARN = "arn:aws:glue:us-east-1:000000000000:dataQualityRuleset/{}"

# orders and the customers they name: order 6 names customer 9, whom the customer table
# lacks; order 4 has no email
ORDERS = {
    "order_id": [1, 2, 3, 4, 5, 6],
    "customer_id": [10, 11, 10, 12, 11, 9],
    "status": ["open", "shipped", "shipped", "open", "returned", "open"],
    "amount": [20.0, 35.5, 12.25, 40.0, 5.0, 17.0],
    "email": ["a@x.io", "b@x.io", "c@x.io", None, "e@x.io", "f@x.io"],
}
CUSTOMERS = {"id": [10, 11, 12, 13], "name": ["Ada", "Bo", "Cy", "Di"]}


def conforms(operation: str, answer: dict) -> dict:
    """``answer`` as botocore's model of the operation's output accepts it."""
    shape = MODEL.operation_model(operation).output_shape
    body = {k: v for k, v in answer.items() if k != "ResponseMetadata"}
    report = ParamValidator().validate(body, shape)
    assert not report.has_errors(), report.generate_report()
    return body


def parquet_table(root: Path, name: str, columns: dict) -> dict:
    folder = root / name
    folder.mkdir(parents=True)
    pq.write_table(pa.table(columns), folder / "part-0.parquet")
    kinds = {pa.int64(): "bigint", pa.float64(): "double", pa.string(): "string"}
    schema = pa.table(columns).schema
    return {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"classification": "parquet"},
        "StorageDescriptor": {
            "Columns": [{"Name": f.name, "Type": kinds[f.type]} for f in schema],
            "Location": folder.as_uri(),
            "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
            "OutputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
            "SerdeInfo": {
                "SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
            },
        },
    }


@pytest.fixture(scope="module")
def api(tmp_path_factory, s3_server):
    root = tmp_path_factory.mktemp("dq")
    running = AthenaApi(root, s3_server.endpoint_url)
    glue = running.client("glue")
    glue.create_database(DatabaseInput={"Name": "shop"})
    for name, columns in (("orders", ORDERS), ("customers", CUSTOMERS)):
        glue.create_table(DatabaseName="shop", TableInput=parquet_table(root / "lake", name, columns))
    yield running
    log = running.stop()
    assert "Traceback" not in log, log[-4000:]


def table(name: str) -> dict:
    return {"GlueTable": {"DatabaseName": "shop", "TableName": name}}


def finished(glue, operation: str, run_id: str, seconds: float = 300) -> dict:
    """The run once it has ended, as GetDataQuality…Run (``operation``) answers it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run = getattr(glue, xform_name(operation))(RunId=run_id)
        if run["Status"] in ("SUCCEEDED", "FAILED", "STOPPED", "TIMEOUT"):
            return conforms(operation, run)
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not end")


def test_terraforms_ruleset_calls_create_read_update_tag_and_delete(api):
    """The calls Terraform's aws_glue_data_quality_ruleset makes, in its order."""
    glue = api.client("glue")
    rules = 'Rules = [ RowCount > 0, IsComplete "order_id" ]'
    created = glue.create_data_quality_ruleset(
        Name="orders-checks",
        Description="orders",
        Ruleset=rules,
        TargetTable={"TableName": "orders", "DatabaseName": "shop"},
        Tags={"team": "sales"},
    )
    assert conforms("CreateDataQualityRuleset", created) == {"Name": "orders-checks"}
    read = conforms("GetDataQualityRuleset", glue.get_data_quality_ruleset(Name="orders-checks"))
    assert read["Ruleset"] == rules and read["TargetTable"] == {"TableName": "orders", "DatabaseName": "shop"}
    assert read["Description"] == "orders" and read["CreatedOn"] <= read["LastModifiedOn"]
    arn = RULESET_ARN.format("orders-checks")
    assert glue.get_tags(ResourceArn=arn)["Tags"] == {"team": "sales"}

    changed = 'Rules = [ RowCount > 1, IsComplete "order_id" ]'
    updated = glue.update_data_quality_ruleset(
        Name="orders-checks", Description="orders, v2", Ruleset=changed
    )
    assert conforms("UpdateDataQualityRuleset", updated) == {
        "Name": "orders-checks",
        "Description": "orders, v2",
        "Ruleset": changed,
    }
    again = glue.get_data_quality_ruleset(Name="orders-checks")
    assert again["Ruleset"] == changed and again["LastModifiedOn"] > read["LastModifiedOn"]
    glue.tag_resource(ResourceArn=arn, TagsToAdd={"tier": "gold"})
    glue.untag_resource(ResourceArn=arn, TagsToRemove=["team"])
    assert glue.get_tags(ResourceArn=arn)["Tags"] == {"tier": "gold"}
    listed = conforms("ListDataQualityRulesets", glue.list_data_quality_rulesets(Tags={"tier": "gold"}))
    assert [(r["Name"], r["RuleCount"]) for r in listed["Rulesets"]] == [("orders-checks", 2)]
    assert glue.list_data_quality_rulesets(Tags={"tier": "bronze"})["Rulesets"] == []

    with pytest.raises(ClientError) as twice:
        glue.create_data_quality_ruleset(Name="orders-checks", Ruleset=rules)
    assert twice.value.response["Error"]["Code"] == "AlreadyExistsException"
    with pytest.raises(ClientError) as bad:
        glue.create_data_quality_ruleset(Name="bad", Ruleset="Rules = [ IsComplete ]")
    assert bad.value.response["Error"]["Code"] == "InvalidInputException"
    assert "not valid DQDL" in bad.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as nowhere:
        glue.create_data_quality_ruleset(
            Name="nowhere", Ruleset=rules, TargetTable={"TableName": "nope", "DatabaseName": "shop"}
        )
    assert nowhere.value.response["Error"]["Code"] == "EntityNotFoundException"

    glue.delete_data_quality_ruleset(Name="orders-checks")
    with pytest.raises(ClientError) as gone:
        glue.get_data_quality_ruleset(Name="orders-checks")
    assert gone.value.response["Error"]["Code"] == "EntityNotFoundException"
    with pytest.raises(ClientError) as untagged:
        glue.get_tags(ResourceArn=arn)
    assert untagged.value.response["Error"]["Code"] == "EntityNotFoundException"


MULTI = """Rules = [
    RowCount = 6,
    ReferentialIntegrity "customer_id" "customers.id" >= 0.8,
    ReferentialIntegrity "customer_id" "customers.id" = 1.0,
    RowCountMatch "customers" = 1.5,
    Completeness "email" > 0.8,
    IsComplete "email",
    ColumnValues "status" in ["open", "shipped"]
]"""


def test_an_evaluation_run_on_two_tables_with_known_differences(api):
    """Multi-dataset rules over AdditionalDataSources: 5 of 6 orders name a known
    customer (5/6 = 0.833), the orders outnumber the customers 6 to 4, one email is
    missing and one status is outside the list."""
    glue = api.client("glue")
    glue.create_data_quality_ruleset(Name="orders-multi", Ruleset=MULTI)
    started = glue.start_data_quality_ruleset_evaluation_run(
        DataSource=table("orders"),
        Role="arn:aws:iam::000000000000:role/dq",
        RulesetNames=["orders-multi"],
        AdditionalDataSources={"customers": table("customers")},
    )
    run = finished(glue, "GetDataQualityRulesetEvaluationRun", started["RunId"])
    assert run["Status"] == "SUCCEEDED", run.get("ErrorString")
    assert run["RulesetNames"] == ["orders-multi"] and len(run["ResultIds"]) == 1
    result = conforms("GetDataQualityResult", glue.get_data_quality_result(ResultId=run["ResultIds"][0]))
    outcomes = {r["Name"]: r["Result"] for r in result["RuleResults"]}
    assert outcomes == {
        "RowCount = 6": "PASS",
        'ReferentialIntegrity "customer_id" "customers.id" >= 0.8': "PASS",
        'ReferentialIntegrity "customer_id" "customers.id" = 1.0': "FAIL",
        'RowCountMatch "customers" = 1.5': "PASS",
        'Completeness "email" > 0.8': "PASS",
        'IsComplete "email"': "FAIL",
        'ColumnValues "status" in ["open", "shipped"]': "FAIL",
    }
    assert result["Score"] == pytest.approx(4 / 7)
    assert result["RulesetEvaluationRunId"] == started["RunId"] and result["DataSource"] == table("orders")
    assert "JobName" not in result
    metrics = {k: v for r in result["RuleResults"] for k, v in r["EvaluatedMetrics"].items()}
    assert metrics["Column.email.Completeness"] == pytest.approx(5 / 6)

    listed = conforms(
        "ListDataQualityRulesetEvaluationRuns",
        glue.list_data_quality_ruleset_evaluation_runs(Filter={"DataSource": table("orders")}),
    )
    assert started["RunId"] in [r["RunId"] for r in listed["Runs"]]
    results = conforms(
        "ListDataQualityResults", glue.list_data_quality_results(Filter={"DataSource": table("orders")})
    )
    assert run["ResultIds"][0] in [r["ResultId"] for r in results["Results"]]
    batch = conforms(
        "BatchGetDataQualityResult",
        glue.batch_get_data_quality_result(ResultIds=[run["ResultIds"][0], "dqresult-0000000000099999"]),
    )
    assert [r["ResultId"] for r in batch["Results"]] == run["ResultIds"]
    assert batch["ResultsNotFound"] == ["dqresult-0000000000099999"]


def test_a_run_on_a_missing_table_or_ruleset_is_refused_and_a_missing_reference_fails(api):
    glue = api.client("glue")
    role = "arn:aws:iam::000000000000:role/dq"
    with pytest.raises(ClientError) as no_table:
        glue.start_data_quality_ruleset_evaluation_run(
            DataSource=table("nope"), Role=role, RulesetNames=["x"]
        )
    assert no_table.value.response["Error"]["Code"] == "EntityNotFoundException"
    with pytest.raises(ClientError) as no_ruleset:
        glue.start_data_quality_ruleset_evaluation_run(
            DataSource=table("orders"), Role=role, RulesetNames=["never-made"]
        )
    assert no_ruleset.value.response["Error"]["Code"] == "EntityNotFoundException"
    # a ruleset naming a reference the run was not given: that rule fails, with the reason
    glue.create_data_quality_ruleset(
        Name="needs-ref", Ruleset='Rules = [ RowCount > 0, RowCountMatch "absent" = 1.0 ]'
    )
    run_id = glue.start_data_quality_ruleset_evaluation_run(
        DataSource=table("orders"), Role=role, RulesetNames=["needs-ref"]
    )["RunId"]
    run = finished(glue, "GetDataQualityRulesetEvaluationRun", run_id)
    (result_id,) = run["ResultIds"]
    rules = glue.get_data_quality_result(ResultId=result_id)["RuleResults"]
    absent = next(r for r in rules if r["Name"].startswith("RowCountMatch"))
    assert (
        absent["Result"] == "FAIL"
        and "reference dataset 'absent' was not given" in absent["EvaluationMessage"]
    )


def test_a_recommendation_runs_ruleset_is_created_then_evaluated_and_passes(api):
    """The AWS CLI starts a recommendation run that creates its ruleset; the ruleset it
    proposes holds on the data it was proposed from."""
    glue = api.client("glue")

    def aws(*args: str) -> dict:
        done = subprocess.run(
            [str(AWS), "glue", *args, "--output", "json"],
            env=api.client_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else {}

    started = aws(
        "start-data-quality-rule-recommendation-run",
        "--data-source",
        json.dumps(table("orders")),
        "--role",
        "arn:aws:iam::000000000000:role/dq",
        "--created-ruleset-name",
        "orders-recommended",
    )
    run = finished(glue, "GetDataQualityRuleRecommendationRun", started["RunId"])
    assert run["Status"] == "SUCCEEDED", run.get("ErrorString")
    proposed = run["RecommendedRuleset"]
    for rule in (
        "RowCount between 3 and 9",
        'IsComplete "order_id"',
        'IsUnique "order_id"',
        'Completeness "email" >= 0.83',
        'ColumnValues "status" in ["open", "returned", "shipped"]',
        'ColumnValues "amount" >= 0',
        'ColumnLength "status" <= 8',
    ):
        assert rule in proposed, proposed
    assert 'IsUnique "customer_id"' not in proposed  # customers 10 and 11 order twice
    kept = glue.get_data_quality_ruleset(Name="orders-recommended")
    assert kept["Ruleset"] == proposed and kept["RecommendationRunId"] == started["RunId"]
    assert kept["TargetTable"] == {"TableName": "orders", "DatabaseName": "shop"}
    listed = aws("list-data-quality-rule-recommendation-runs")
    assert started["RunId"] in [r["RunId"] for r in listed["Runs"]]

    evaluated = glue.start_data_quality_ruleset_evaluation_run(
        DataSource=table("orders"),
        Role="arn:aws:iam::000000000000:role/dq",
        RulesetNames=["orders-recommended"],
    )
    run = finished(glue, "GetDataQualityRulesetEvaluationRun", evaluated["RunId"])
    result = glue.get_data_quality_result(ResultId=run["ResultIds"][0])
    failed = [r["Name"] for r in result["RuleResults"] if r["Result"] != "PASS"]
    assert failed == [] and result["Score"] == 1.0


def test_a_run_cancelled_before_the_engine_takes_it_is_stopped_and_an_ended_run_is_not_cancelled(api):
    glue = api.client("glue")
    glue.create_data_quality_ruleset(Name="to-cancel", Ruleset="Rules = [ RowCount > 0 ]")
    role = "arn:aws:iam::000000000000:role/dq"
    first = glue.start_data_quality_ruleset_evaluation_run(
        DataSource=table("orders"), Role=role, RulesetNames=["to-cancel"]
    )["RunId"]
    second = glue.start_data_quality_ruleset_evaluation_run(
        DataSource=table("orders"), Role=role, RulesetNames=["to-cancel"]
    )["RunId"]
    glue.cancel_data_quality_ruleset_evaluation_run(RunId=second)
    assert finished(glue, "GetDataQualityRulesetEvaluationRun", second)["Status"] in ("STOPPED",)
    assert finished(glue, "GetDataQualityRulesetEvaluationRun", first)["Status"] == "SUCCEEDED"
    with pytest.raises(ClientError) as ended:
        glue.cancel_data_quality_ruleset_evaluation_run(RunId=first)
    assert ended.value.response["Error"]["Code"] == "InvalidInputException"
    # the same ClientToken is the same run, as Glue's retries expect
    once = glue.start_data_quality_ruleset_evaluation_run(
        DataSource=table("orders"), Role=role, RulesetNames=["to-cancel"], ClientToken="retry-1"
    )["RunId"]
    twice = glue.start_data_quality_ruleset_evaluation_run(
        DataSource=table("orders"), Role=role, RulesetNames=["to-cancel"], ClientToken="retry-1"
    )["RunId"]
    assert once == twice
    finished(glue, "GetDataQualityRulesetEvaluationRun", once)


def test_statistics_their_annotations_and_the_model_of_one_statistic(api):
    """Four evaluation runs give four data points of the RowCount statistic; one is
    excluded, then included again, as the console's "Exclude statistics" does."""
    glue = api.client("glue")
    glue.create_data_quality_ruleset(
        Name="volume", Ruleset='Rules = [ RowCount > 0, DetectAnomalies "RowCount" ]'
    )
    role = "arn:aws:iam::000000000000:role/dq"
    for _ in range(4):
        run_id = glue.start_data_quality_ruleset_evaluation_run(
            DataSource=table("orders"), Role=role, RulesetNames=["volume"]
        )["RunId"]
        ended = finished(glue, "GetDataQualityRulesetEvaluationRun", run_id)
        assert ended["Status"] == "SUCCEEDED", ended.get("ErrorString")
    listed = conforms("ListDataQualityStatistics", glue.list_data_quality_statistics())["Statistics"]
    counts = [
        s
        for s in listed
        if s["StatisticName"] == "RowCount" and s["StatisticProperties"]["Ruleset"] == "volume"
    ]
    assert len(counts) == 4 and {s["DoubleValue"] for s in counts} == {6.0}
    assert len({s["StatisticId"] for s in counts}) == 1 and len({s["ProfileId"] for s in counts}) == 4
    assert counts[0]["EvaluationLevel"] == "Dataset" and counts[0]["RunIdentifier"]["RunId"].startswith(
        "dqrun-"
    )
    statistic = counts[0]["StatisticId"]
    oldest_first = sorted(counts, key=lambda s: s["RecordedOn"])
    second, last = oldest_first[1]["ProfileId"], oldest_first[-1]["ProfileId"]

    answer = glue.batch_put_data_quality_statistic_annotation(
        InclusionAnnotations=[
            {"ProfileId": second, "StatisticId": statistic, "InclusionAnnotation": "EXCLUDE"},
            {"ProfileId": second, "StatisticId": "dqstat-none", "InclusionAnnotation": "EXCLUDE"},
        ]
    )
    failed = conforms("BatchPutDataQualityStatisticAnnotation", answer)["FailedInclusionAnnotations"]
    assert [f["StatisticId"] for f in failed] == ["dqstat-none"]
    annotations = conforms(
        "ListDataQualityStatisticAnnotations",
        glue.list_data_quality_statistic_annotations(StatisticId=statistic),
    )["Annotations"]
    assert [(a["ProfileId"], a["InclusionAnnotation"]["Value"]) for a in annotations] == [(second, "EXCLUDE")]

    model = conforms(
        "GetDataQualityModelResult", glue.get_data_quality_model_result(StatisticId=statistic, ProfileId=last)
    )["Model"]
    assert [m["ActualValue"] for m in model] == [6.0] * 4
    assert [m["InclusionAnnotation"] for m in model] == ["INCLUDE", "EXCLUDE", "INCLUDE", "INCLUDE"]
    assert "PredictedValue" not in model[0]  # no history before the first point
    status = conforms(
        "GetDataQualityModel", glue.get_data_quality_model(StatisticId=statistic, ProfileId=last)
    )
    assert status["Status"] == "SUCCEEDED"

    glue.put_data_quality_profile_annotation(ProfileId=second, InclusionAnnotation="INCLUDE")
    again = glue.list_data_quality_statistic_annotations(StatisticId=statistic)["Annotations"]
    assert [a["InclusionAnnotation"]["Value"] for a in again] == ["INCLUDE"]
    with pytest.raises(ClientError) as nowhere:
        glue.get_data_quality_model_result(StatisticId=statistic, ProfileId="dqprofile-0000000009999999")
    assert nowhere.value.response["Error"]["Code"] == "EntityNotFoundException"
