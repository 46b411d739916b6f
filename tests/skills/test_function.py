"""Function skills: the ``@skill`` decorator, argument validation, and registering in code."""

import inspect
from typing import Literal

import pytest

from nini.errors import ErrorCode, NiniError
from nini.skills import FunctionSkill, SkillRegistry, skill
from nini.skills.function import parse_docstring


@skill(category="stats")
def correlate(
    values: list[float],
    other: list[float],
    method: Literal["pearson", "spearman"] = "pearson",
    alpha: float | None = None,
    label: str | None = None,
    min_rows: int = 3,
) -> dict:
    """Correlate two numeric columns
    and report the coefficient.

    Use it when the user asks how two measures move together.

    Args:
        values: The first column.
        other: The second column, same length
            as the first one.
        method: Which coefficient to compute.
        alpha (float): Significance level; none means no test.
        min_rows: Fewest rows accepted.

    Returns:
        The coefficient and, with alpha, the p-value.
    """
    return {"method": method}


# -- the decorator ---------------------------------------------------------------------------------


def test_decorator_returns_a_function_skill_that_still_runs():
    assert isinstance(correlate, FunctionSkill)
    assert correlate.name == "correlate"
    assert correlate.func([1.0], [2.0], method="spearman") == {"method": "spearman"}
    assert correlate.location == f"{__name__}:correlate"


def test_description_is_the_first_docstring_paragraph():
    assert correlate.description == "Correlate two numeric columns and report the coefficient."


def test_category_is_normalised():
    assert correlate.category == "statistics"


def test_schema_required_and_types_come_from_hints():
    schema = correlate.input_schema()
    props = schema["properties"]

    assert schema["required"] == ["values", "other"]
    assert props["values"]["type"] == "array" and props["values"]["items"] == {"type": "number"}
    assert props["method"]["enum"] == ["pearson", "spearman"]
    assert props["method"]["default"] == "pearson"
    assert {t.get("type") for t in props["alpha"]["anyOf"]} == {"number", "null"}
    assert props["alpha"]["default"] is None
    assert {t.get("type") for t in props["label"]["anyOf"]} == {"string", "null"}
    assert props["min_rows"] == {**props["min_rows"], "type": "integer", "default": 3}
    assert schema.get("additionalProperties") is False


def test_parameter_descriptions_come_from_the_args_section():
    props = correlate.input_schema()["properties"]

    assert props["values"]["description"] == "The first column."
    assert props["other"]["description"] == "The second column, same length as the first one."
    assert props["method"]["description"] == "Which coefficient to compute."
    assert props["alpha"]["description"] == "Significance level; none means no test."
    assert props["min_rows"]["description"] == "Fewest rows accepted."
    assert "description" not in props["label"]  # not documented: no invented text


def test_parse_docstring_stops_at_the_next_section():
    summary, args = parse_docstring(inspect.getdoc(correlate.func))  # what the decorator passes
    assert "Returns" not in " ".join(args.values())
    assert set(args) == {"values", "other", "method", "alpha", "min_rows"}
    assert summary.startswith("Correlate two numeric columns")


def test_explicit_name_description_and_metadata_override_the_function():
    @skill("column-mean", description="  Mean of one column.  ", category="Charts", version="2")
    def mean_of_column(column: str) -> float:
        """Docstring summary that is overridden."""
        return 0.0

    assert mean_of_column.name == "column-mean"
    assert mean_of_column.description == "Mean of one column."
    assert mean_of_column.category == "visualization"
    assert mean_of_column.metadata == {"version": "2"}
    assert mean_of_column.input_model.__name__ == "ColumnMeanInput"


def test_unknown_category_is_other_with_the_raw_value():
    @skill(category="Astrology")
    def horoscope(sign: str) -> str:
        return sign

    assert horoscope.category == "other"
    assert horoscope.metadata["raw_category"] == "Astrology"
    assert horoscope.description == "horoscope"  # no docstring: the name stands in


def test_parameter_without_type_hint_is_refused_at_decoration():
    with pytest.raises(NiniError) as info:

        @skill()
        def untyped(table: str, column, limit: int = 3) -> None:
            """Has an untyped parameter."""

    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "'column'" in info.value.message and "type hint" in info.value.message


def test_unresolvable_type_hint_is_refused_at_decoration():
    with pytest.raises(NiniError) as info:

        @skill()
        def broken(table: "NoSuchType") -> None:  # noqa: F821
            """Hint names nothing."""

    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "NoSuchType" in info.value.message


# -- validate_arguments ----------------------------------------------------------------------------


def test_validate_arguments_coerces_and_fills_defaults():
    args = correlate.validate_arguments({"values": ["1.5", 2], "other": [3, "4"], "alpha": "0.05", "min_rows": "5"})

    assert args == {
        "values": [1.5, 2.0],
        "other": [3.0, 4.0],
        "method": "pearson",
        "alpha": 0.05,
        "label": None,
        "min_rows": 5,
    }
    assert all(isinstance(v, float) for v in args["values"])


def test_validate_arguments_lists_every_bad_field():
    with pytest.raises(NiniError) as info:
        correlate.validate_arguments({"values": [1.0, "abc"], "method": "kendall", "min_rows": "many", "bogus": 1})

    error = info.value
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert error.details["skill"] == "correlate"
    problems = {p["field"]: p["message"] for p in error.details["problems"]}
    assert set(problems) == {"values.1", "other", "method", "min_rows", "bogus"}
    assert "required" in problems["other"].lower()
    assert "extra" in problems["bogus"].lower()
    assert "pearson" in problems["method"]
    for field in problems:
        assert field in error.message


def test_validate_arguments_rejects_a_non_mapping():
    with pytest.raises(NiniError) as info:
        correlate.validate_arguments(["values", "other"])  # type: ignore[arg-type]

    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.details["problems"][0]["field"] == "(arguments)"


# -- registering in code ---------------------------------------------------------------------------


@pytest.fixture
def registry(settings, project_dir) -> SkillRegistry:
    return SkillRegistry(settings, project_dir, function_skills=[])


def test_register_adds_a_function_skill_to_the_list(registry):
    assert "correlate" not in {r["name"] for r in registry.list()}

    registry.register(correlate)

    functions = registry.list(type="function")
    assert [r["name"] for r in functions] == ["correlate"]
    record = functions[0]
    assert record["type"] == "function"
    assert record["enabled"] is True
    assert record["category"] == "statistics"
    assert record["location"] == f"{__name__}:correlate"
    assert record["metadata"]["source"] == "code"
    assert record["metadata"]["input_schema"] == correlate.input_schema()
    assert registry.function("correlate") is correlate
    assert "correlate" not in {r["name"] for r in registry.list(type="markdown")}


def test_registering_the_same_name_twice_is_a_conflict(registry):
    registry.register(correlate)

    @skill("correlate")
    def another(x: int) -> int:
        return x

    with pytest.raises(NiniError) as info:
        registry.register(another)

    assert info.value.code is ErrorCode.CONFLICT
    assert registry.function("correlate") is correlate


def test_unregister_removes_it(registry):
    registry.register(correlate)

    registry.unregister("correlate")

    assert "correlate" not in {r["name"] for r in registry.list()}
    with pytest.raises(NiniError) as info:
        registry.function("correlate")
    assert info.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(NiniError) as info:
        registry.unregister("correlate")
    assert info.value.code is ErrorCode.NOT_FOUND


def test_list_rejects_an_unknown_type(registry):
    with pytest.raises(NiniError) as info:
        registry.list(type="python")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
