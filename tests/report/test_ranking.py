"""Findings that matter: ranked from real notebook outputs, noise never kept, the notebook's order
and its cell numbers.

The cells below are verbatim from ageron/handson-ml3 (Apache-2.0), 02_end_to_end_machine_learning_project.ipynb
at e3f3f9e: each is (cell number among all cells, nearest heading above it, source, saved outputs as
("stdout", stream text) or ("plain", the text/plain of an execute_result or display_data)). Cell 195's
DataFrame is given as the table its text/html holds.

These noise cases are verbatim saved outputs: "%time", "%time in minutes" (handson-ml3's
08_dimensionality_reduction.ipynb), "NbConvertApp", "package check", "object at", "figure"
(rasbt/machine-learning-book's ch02/ch02.ipynb), "missing pip", "Altair chart", "version"
(uwdata/visualization-curriculum's altair_debugging.ipynb), "joblib.dump", "numpy array", "sparse matrix"
(chapter 2 above); the others are written in the form IPython, R, matplotlib or scikit-learn print.
"""

from __future__ import annotations

import pytest

from nini.report.findings import Finding, key_findings
from nini.report.model import Step, Value
from nini.report.noise import clean_output, noise_value
from nini.report.ranking import Prose

CH2 = [
    (4, None, 'print("Welcome to Machine Learning!")', [("stdout", "Welcome to Machine Learning!\n")]),
    (
        16,
        "Take a Quick Look at the Data Structure",
        'housing["ocean_proximity"].value_counts()',
        [
            (
                "plain",
                "<1H OCEAN     9136\nINLAND        6551\nNEAR OCEAN    2658\nNEAR BAY      2290\nISLAND           5\nName: ocean_proximity, dtype: int64",
            )
        ],
    ),
    (
        23,
        "Create a Test Set",
        "train_set, test_set = shuffle_and_split_data(housing, 0.2)\nlen(train_set)",
        [("plain", "16512")],
    ),
    (
        35,
        "Create a Test Set",
        "# extra code – shows how to compute the 10.7% proba of getting a bad sample\n\nfrom scipy.stats import binom\n\nsample_size = 1000\nratio_female = 0.511\nproba_too_small = binom(sample_size, ratio_female).cdf(485 - 1)\nproba_too_large = 1 - binom(sample_size, ratio_female).cdf(535)\nprint(proba_too_small + proba_too_large)",
        [("stdout", "0.10736798530929946\n")],
    ),
    (
        59,
        "Looking for Correlations",
        'corr_matrix["median_house_value"].sort_values(ascending=False)',
        [
            (
                "plain",
                "median_house_value    1.000000\nmedian_income         0.688380\ntotal_rooms           0.137455\nhousing_median_age    0.102175\nhouseholds            0.071426\ntotal_bedrooms        0.054635\npopulation           -0.020153\nlongitude            -0.050859\nlatitude             -0.139584\nName: median_house_value, dtype: float64",
            )
        ],
    ),
    (77, "Data Cleaning", "imputer.fit(housing_num)", [("plain", "SimpleImputer(strategy='median')")]),
    (
        78,
        "Data Cleaning",
        "imputer.statistics_",
        [
            (
                "plain",
                "array([-118.51  ,   34.26  ,   29.    , 2125.    ,  434.    , 1167.    ,\n        408.    ,    3.5385])",
            )
        ],
    ),
    (
        102,
        "Handling Text and Categorical Attributes",
        "housing_cat_1hot",
        [
            (
                "plain",
                "<16512x5 sparse matrix of type '<class 'numpy.float64'>'\n\twith 16512 stored elements in Compressed Sparse Row format>",
            )
        ],
    ),
    (
        165,
        "Training and Evaluating on the Training Set",
        "from sklearn.linear_model import LinearRegression\n\nlin_reg = make_pipeline(preprocessing, LinearRegression())\nlin_reg.fit(housing, housing_labels)",
        [
            (
                "plain",
                "Pipeline(steps=[('columntransformer',\n                 ColumnTransformer(remainder=Pipeline(steps=[('simpleimputer',\n                                                              SimpleImputer(strategy='median')),\n                                                             ('standardscaler',\n                                                              StandardScaler())]),\n                                   transformers=[('bedrooms',\n                                                  Pipeline(steps=[('simpleimputer',\n                                                                   SimpleImputer(strategy='median')),\n                                                                  ('functiontransformer',\n                                                                   FunctionTransformer(feature_names_out=<function ratio_name at 0x1a5...\n                                                   'households',\n                                                   'median_income']),\n                                                 ('geo',\n                                                  ClusterSimilarity(random_state=42),\n                                                  ['latitude', 'longitude']),\n                                                 ('cat',\n                                                  Pipeline(steps=[('simpleimputer',\n                                                                   SimpleImputer(strategy='most_frequent')),\n                                                                  ('onehotencoder',\n                                                                   OneHotEncoder(handle_unknown='ignore'))]),\n                                                  <sklearn.compose._column_transformer.make_column_selector object at 0x1a57e3a00>)])),\n                ('linearregression', LinearRegression())])",
            )
        ],
    ),
    (
        172,
        "Training and Evaluating on the Training Set",
        "try:\n    from sklearn.metrics import root_mean_squared_error\nexcept ImportError:\n    from sklearn.metrics import mean_squared_error\n\n    def root_mean_squared_error(labels, predictions):\n        return mean_squared_error(labels, predictions, squared=False)\n\nlin_rmse = root_mean_squared_error(housing_labels, housing_predictions)\nlin_rmse",
        [("plain", "68687.89176589991")],
    ),
    (
        174,
        "Training and Evaluating on the Training Set",
        "housing_predictions = tree_reg.predict(housing)\ntree_rmse = root_mean_squared_error(housing_labels, housing_predictions)\ntree_rmse",
        [("plain", "0.0")],
    ),
    (
        177,
        "Better Evaluation Using Cross-Validation",
        "pd.Series(tree_rmses).describe()",
        [
            (
                "plain",
                "count       10.000000\nmean     66868.027288\nstd       2060.966425\nmin      63649.536493\n25%      65338.078316\n50%      66801.953094\n75%      68229.934454\nmax      70094.778246\ndtype: float64",
            )
        ],
    ),
    (
        178,
        "Better Evaluation Using Cross-Validation",
        '# extra code – computes the error stats for the linear model\nlin_rmses = -cross_val_score(lin_reg, housing, housing_labels,\n                              scoring="neg_root_mean_squared_error", cv=10)\npd.Series(lin_rmses).describe()',
        [
            (
                "plain",
                "count       10.000000\nmean     69858.018195\nstd       4182.205077\nmin      65397.780144\n25%      68070.536263\n50%      68619.737842\n75%      69810.076342\nmax      80959.348171\ndtype: float64",
            )
        ],
    ),
    (
        181,
        "Better Evaluation Using Cross-Validation",
        "pd.Series(forest_rmses).describe()",
        [
            (
                "plain",
                "count       10.000000\nmean     47019.561281\nstd       1033.957120\nmin      45458.112527\n25%      46464.031184\n50%      46967.596354\n75%      47325.694987\nmax      49243.765795\ndtype: float64",
            )
        ],
    ),
    (
        183,
        "Better Evaluation Using Cross-Validation",
        "forest_reg.fit(housing, housing_labels)\nhousing_predictions = forest_reg.predict(housing)\nforest_rmse = root_mean_squared_error(housing_labels, housing_predictions)\nforest_rmse",
        [("plain", "17474.619286483998")],
    ),
    (
        188,
        "Grid Search",
        "from sklearn.model_selection import GridSearchCV\n\nfull_pipeline = Pipeline([\n    (\"preprocessing\", preprocessing),\n    (\"random_forest\", RandomForestRegressor(random_state=42)),\n])\nparam_grid = [\n    {'preprocessing__geo__n_clusters': [5, 8, 10],\n     'random_forest__max_features': [4, 6, 8]},\n    {'preprocessing__geo__n_clusters': [10, 15],\n     'random_forest__max_features': [6, 8, 10]},\n]\ngrid_search = GridSearchCV(full_pipeline, param_grid, cv=3,\n                           scoring='neg_root_mean_squared_error')\ngrid_search.fit(housing, housing_labels)",
        [
            (
                "plain",
                "GridSearchCV(cv=3,\n             estimator=Pipeline(steps=[('preprocessing',\n                                        ColumnTransformer(remainder=Pipeline(steps=[('simpleimputer',\n                                                                                     SimpleImputer(strategy='median')),\n                                                                                    ('standardscaler',\n                                                                                     StandardScaler())]),\n                                                          transformers=[('bedrooms',\n                                                                         Pipeline(steps=[('simpleimputer',\n                                                                                          SimpleImputer(strategy='median')),\n                                                                                         ('functiontransformer',\n                                                                                          FunctionTransformer(feature_names_out=<f...\n                                                                         <sklearn.compose._column_transformer.make_column_selector object at 0x1a57e3a00>)])),\n                                       ('random_forest',\n                                        RandomForestRegressor(random_state=42))]),\n             param_grid=[{'preprocessing__geo__n_clusters': [5, 8, 10],\n                          'random_forest__max_features': [4, 6, 8]},\n                         {'preprocessing__geo__n_clusters': [10, 15],\n                          'random_forest__max_features': [6, 8, 10]}],\n             scoring='neg_root_mean_squared_error')",
            )
        ],
    ),
    (
        192,
        "Grid Search",
        "grid_search.best_params_",
        [("plain", "{'preprocessing__geo__n_clusters': 15, 'random_forest__max_features': 6}")],
    ),
    (
        195,
        "Grid Search",
        'cv_res = pd.DataFrame(grid_search.cv_results_)\ncv_res.sort_values(by="mean_test_score", ascending=False, inplace=True)\n\n# extra code – these few lines of code just make the DataFrame look nicer\ncv_res = cv_res[["param_preprocessing__geo__n_clusters",\n                 "param_random_forest__max_features", "split0_test_score",\n                 "split1_test_score", "split2_test_score", "mean_test_score"]]\nscore_cols = ["split0", "split1", "split2", "mean_test_rmse"]\ncv_res.columns = ["n_clusters", "max_features"] + score_cols\ncv_res[score_cols] = -cv_res[score_cols].round().astype(np.int64)\n\ncv_res.head()',
        [
            (
                "plain",
                "   n_clusters max_features  split0  split1  split2  mean_test_rmse\n12         15            6   43460   43919   44748           44042\n13         15            8   44132   44075   45010           44406\n14         15           10   44374   44286   45316           44659\n7          10            6   44683   44655   45657           44999\n9          10            6   44683   44655   45657           44999",
            )
        ],
    ),
    (
        208,
        "Analyze the Best Models and Their Errors",
        'final_model = rnd_search.best_estimator_  # includes preprocessing\nfeature_importances = final_model["random_forest"].feature_importances_\nfeature_importances.round(2)',
        [
            (
                "plain",
                "array([0.07, 0.05, 0.05, 0.01, 0.01, 0.01, 0.01, 0.19, 0.04, 0.01, 0.  ,\n       0.01, 0.01, 0.01, 0.01, 0.01, 0.  , 0.01, 0.01, 0.01, 0.  , 0.01,\n       0.01, 0.01, 0.01, 0.01, 0.  , 0.  , 0.02, 0.01, 0.01, 0.01, 0.02,\n       0.01, 0.  , 0.02, 0.03, 0.01, 0.01, 0.01, 0.01, 0.01, 0.02, 0.01,\n       0.01, 0.02, 0.01, 0.01, 0.01, 0.01, 0.01, 0.02, 0.01, 0.  , 0.07,\n       0.  , 0.  , 0.  , 0.01])",
            )
        ],
    ),
    (
        211,
        "Evaluate Your System on the Test Set",
        'X_test = strat_test_set.drop("median_house_value", axis=1)\ny_test = strat_test_set["median_house_value"].copy()\n\nfinal_predictions = final_model.predict(X_test)\n\nfinal_rmse = root_mean_squared_error(y_test, final_predictions)\nprint(final_rmse)',
        [("stdout", "41424.40026462184\n")],
    ),
    (
        214,
        "Evaluate Your System on the Test Set",
        "rmse_lower, rmse_upper",
        [("plain", "(39574.03054635233, 43779.833703193224)")],
    ),
    (
        217,
        "Model persistence using joblib",
        'import joblib\n\njoblib.dump(final_model, "my_california_housing_model.pkl")',
        [("plain", "['my_california_housing_model.pkl']")],
    ),
    (
        220,
        "Model persistence using joblib",
        "predictions",
        [("plain", "array([442737.15, 457566.06, 105965.  ,  98462.  , 332992.01])")],
    ),
    (
        227,
        "1.",
        "svr_grid_search_rmse = -grid_search.best_score_\nsvr_grid_search_rmse",
        [("plain", "69814.13889867254")],
    ),
    (236, "2.", "svr_rnd_search_rmse = -rnd_search.best_score_\nsvr_rnd_search_rmse", [("plain", "55853.88100300133")]),
    (
        241,
        "2.",
        "np.random.seed(42)\n\ns = expon(scale=1).rvs(100_000)  # get 100,000 samples\n((s > 0.105) & (s < 2.29)).sum() / 100_000",
        [("plain", "0.80066")],
    ),
    (
        267,
        "5.",
        "new_geo_rnd_search_rmse = -new_geo_rnd_search.best_score_\nnew_geo_rnd_search_rmse",
        [("plain", "106775.63787128967")],
    ),
]
# cv_res.head() of cell 195, from its text/html (the grid search's model comparison)
CV_RES = (
    ("", "n_clusters", "max_features", "split0", "split1", "split2", "mean_test_rmse"),
    ("12", "15", "6", "43460", "43919", "44748", "44042"),
    ("13", "15", "8", "44132", "44075", "45010", "44406"),
    ("14", "15", "10", "44374", "44286", "45316", "44659"),
    ("7", "10", "6", "44683", "44655", "45657", "44999"),
    ("9", "10", "6", "44683", "44655", "45657", "44999"),
)
# the notebook's headings (its Markdown cells' heading lines, in order) and the sentence above cell 213
CH2_NOTES = [
    "# Get the Data",
    "## Download the Data",
    "## Take a Quick Look at the Data Structure",
    "## Create a Test Set",
    "# Discover and Visualize the Data to Gain Insights",
    "## Visualizing Geographical Data",
    "## Looking for Correlations",
    "## Experimenting with Attribute Combinations",
    "# Prepare the Data for Machine Learning Algorithms",
    "## Data Cleaning",
    "## Handling Text and Categorical Attributes",
    "## Feature Scaling",
    "## Custom Transformers",
    "## Transformation Pipelines",
    "# Select and Train a Model",
    "## Training and Evaluating on the Training Set",
    "## Better Evaluation Using Cross-Validation",
    "# Fine-Tune Your Model",
    "## Grid Search",
    "## Randomized Search",
    "## Analyze the Best Models and Their Errors",
    "## Evaluate Your System on the Test Set",
    "We can compute a 95% confidence interval for the test RMSE:",
    "## Model persistence using joblib",
    "# Exercise solutions",
    "## 1.",
    "## 2.",
    "## 3.",
    "## 4.",
    "## 5.",
    "## 6.",
]


def notebook_steps(cells: list[tuple[int, str | None, str, list[tuple[str, str]]]]) -> list[Step]:
    """Steps as a notebook source makes them: a cell's last text/plain is its result, its streams
    its stdout; numbered by the cell's position, under its nearest heading."""
    steps = []
    for order, (cell, section, code, outputs) in enumerate(cells):
        plain = [text for kind, text in outputs if kind == "plain"]
        table = CV_RES if cell == 195 else None
        steps.append(
            Step(
                id=f"cell-{cell}",
                order=order,
                language="python",
                status="succeeded",
                code=code,
                cell=cell,
                section=section,
                stdout="".join(text for kind, text in outputs if kind == "stdout"),
                result=plain[-1] if plain and table is None else None,
                values=(Value(table=table, origin="result"),) if table else (),
            )
        )
    return steps


def by_cell(findings: list[Finding]) -> dict[int | None, str]:
    return {finding.cell: finding.text for finding in findings}


def test_the_final_test_rmse_its_interval_and_the_model_comparison_are_findings() -> None:
    found = by_cell(key_findings(notebook_steps(CH2), notes=CH2_NOTES))
    assert found[211] == "final_rmse: 41424"  # print(final_rmse): the printed number is named by what it printed
    assert found[214] == "rmse_lower, rmse_upper: (39574, 43780)"  # its 95% confidence interval
    # the model comparison: cross-validated RMSEs of the tree, the linear model and the forest, and the grid search
    assert {177, 178, 181, 195} <= set(found)
    assert found[172] == "lin_rmse: 68688" and found[183] == "forest_rmse: 17475"


def test_joblib_dump_an_exercise_rmse_and_reprs_are_not_findings() -> None:
    found = by_cell(key_findings(notebook_steps(CH2), notes=CH2_NOTES))
    assert 217 not in found  # joblib.dump(...) -> ['my_california_housing_model.pkl']
    assert not {227, 236, 241, 267} & set(found)  # the exercises' RMSEs rank below the chapter's results
    assert not {77, 165, 188} & set(found)  # SimpleImputer(...), Pipeline(steps=[...]), GridSearchCV(...) reprs
    assert not {78, 102, 208, 220} & set(found)  # numpy arrays and a sparse matrix's repr
    assert not any("Pipeline(" in text or "array" in text or ".pkl" in text for text in found.values())


def test_findings_keep_the_notebooks_order_and_name_their_cells() -> None:
    findings = key_findings(notebook_steps(CH2), notes=CH2_NOTES)
    cells = [finding.cell for finding in findings]
    assert len(findings) == 12
    assert cells == sorted(cells)  # rank chose them; the list is in the order of the analysis
    for finding in findings:
        assert finding.step_id == f"cell-{finding.cell}"
    assert [finding.order for finding in findings] == sorted(finding.order for finding in findings)
    assert sorted(finding.rank for finding in findings) == list(range(1, 13))
    top = {finding.cell for finding in findings if finding.rank <= 3}
    assert top <= {195, 201, 211, 214}  # the final model's results rank first


def test_without_the_limit_the_exercises_come_last() -> None:
    findings = key_findings(notebook_steps(CH2), notes=CH2_NOTES, limit=100)
    exercises = [finding.rank for finding in findings if finding.cell in (227, 236, 267)]
    chapter = [finding.rank for finding in findings if finding.cell is not None and finding.cell < 222]
    assert len(exercises) == 3 and min(exercises) > max(chapter)


def test_an_exercise_heading_ranks_low_without_the_notes_too() -> None:
    steps = [
        Step(
            id=f"s{n}",
            order=n,
            language="python",
            status="succeeded",
            code="rmse",
            result=str(40_000 + n),
            cell=n + 1,
            section=section,
        )
        for n, section in enumerate(["Exercise 1", "Results", "练习 2", "Exercises"])
    ]
    assert [finding.cell for finding in key_findings(steps, limit=1)] == [2]


def test_a_value_the_prose_quotes_ranks_above_an_unquoted_one() -> None:
    steps = [
        Step(id="a", order=0, language="python", status="succeeded", code="n_stores", result="1035"),
        Step(id="b", order=1, language="python", status="succeeded", code="n_days", result="942"),
    ]
    assert [f.text for f in key_findings(steps, limit=1, notes=["We keep all 1,035 stores."])] == ["n_stores: 1035"]
    assert [f.text for f in key_findings(steps, limit=1, notes=["`n_stores` counts them"])] == ["n_stores: 1035"]
    assert [f.text for f in key_findings(steps, limit=1)] == ["n_days: 942"]  # a tie goes to the later step


def test_prose_quotes_numbers_as_people_write_them() -> None:
    prose = Prose.of(["the 10.7% proba of getting a bad sample", "an RMSE of 41,424", "in 2021, 12 of them"])
    assert prose.quotes([], "0.10736798530929946") and prose.quotes([], "41424.40026462184")
    assert not prose.quotes([], "2021") and not prose.quotes([], "12") and not prose.quotes([], "0.1")


def test_a_sections_final_result_ranks_above_the_rest_of_it() -> None:
    steps = [
        Step(
            id=f"s{n}",
            order=n,
            language="python",
            status="succeeded",
            code=f"len(part{n})",
            result=str(100 + n),
            cell=n + 1,
            section=section,
        )
        for n, section in enumerate(["Load", "Load", "Load", "Clean", "Clean", "Clean"])
    ]
    assert [finding.cell for finding in key_findings(steps, limit=2)] == [3, 6]


def test_a_named_metric_outranks_a_later_plain_value() -> None:
    steps = [
        Step(id="a", order=0, language="python", status="succeeded", code="accuracy_score(y, p)", result="0.93"),
        Step(id="b", order=1, language="python", status="succeeded", code="len(df)", result="1035"),
    ]
    assert [f.text for f in key_findings(steps, limit=1)] == ["accuracy_score(y, p): 0.93"]


def test_an_r_coefficient_table_is_an_estimate() -> None:
    table = (
        ("", "Estimate", "Std. Error", "t value", "Pr(>|t|)"),
        ("(Intercept)", "37.22727", "1.59879", "23.285", "< 2e-16"),
        ("wt", "-3.87783", "0.63273", "-6.129", "1.12e-06"),
    )
    steps = [
        Step(
            id="a",
            order=0,
            language="r",
            status="succeeded",
            code="summary(fit)",
            values=(Value(table=table, origin="printed"),),
        ),
        Step(
            id="b",
            order=1,
            language="r",
            status="succeeded",
            code="nrow(mtcars)",
            values=(Value(text="32", origin="result"),),
        ),
    ]
    found = key_findings(steps, limit=1)
    assert [(f.text, f.table) for f in found] == [("summary(fit)", table)]


def test_a_named_value_keeps_its_name_and_an_unnamed_one_its_expression() -> None:
    steps = [
        Step(
            id="a",
            order=0,
            language="r",
            status="succeeded",
            code="sum(1:10)",
            cell=3,
            values=(Value(text="55", origin="display"), Value(text="0.7528", name="Multiple R-squared")),
        )
    ]
    assert [(f.text, f.cell) for f in key_findings(steps)] == [("Multiple R-squared: 0.7528", 3)]
    steps = [
        Step(
            id="a",
            order=0,
            language="r",
            status="succeeded",
            code="sum(1:10)",
            cell=3,
            values=(Value(text="55", origin="result"),),
        )
    ]  # IRkernel's display_data of the last value
    assert [(f.text, f.cell) for f in key_findings(steps)] == [("sum(1:10): 55", 3)]


def test_a_session_finding_names_its_step_order() -> None:
    steps = [
        Step(id="x", order=0, language="python", status="succeeded", code="", label="load", result={"rows": 9}),
        Step(id="y", order=1, language="python", status="failed", code="", result={"rows": 1}),
        Step(id="z", order=2, language="python", status="succeeded", code="", label="fit", result={"r2": 0.5}),
    ]
    found = key_findings(steps)
    assert [(f.step_id, f.order, f.cell) for f in found] == [("x", 0, None), ("z", 2, None)]


# Each noise string is verbatim from a real notebook's saved outputs (see the module docstring).
NOISE_LINES = {
    "%time": "CPU times: user 37.7 s, sys: 588 ms, total: 38.3 s\nWall time: 38.4 s\n",
    "%time in minutes": "CPU times: user 1min 28s, sys: 590 ms, total: 1min 28s\nWall time: 1min 28s\n",
    "%timeit": "1.23 ms ± 4.5 µs per loop (mean ± std. dev. of 7 runs, 1,000 loops each)\n",
    "%timeit (old IPython)": "100 loops, best of 3: 4.03 ms per loop\n",
    "NbConvertApp": (
        "[NbConvertApp] WARNING | Config option `kernel_spec_manager_class` not recognized by `NbConvertApp`.\n"
        "[NbConvertApp] Converting notebook ch02.ipynb to script\n[NbConvertApp] Writing 16083 bytes to ch02.py\n"
    ),
    "package check": (
        "[OK] Your Python version is 3.9.6 | packaged by conda-forge | (default, Jul 11 2021, 03:35:11) \n"
        "[Clang 11.1.0 ]\n[OK] numpy 1.22.0\n[OK] matplotlib 3.5.1\n[OK] pandas 1.3.5\n"
    ),
    "versions": "sklearn 1.2.0\nPython 3.10.4\nnumpy version: 1.24.3\nR version 4.3.1 (2023-06-16)\n",
    "missing pip": "zsh:1: command not found: pip\n",
    "download": "Downloading data from https://github.com/ageron/data/raw/main/housing.tgz\n",
    "figure saved": "Saving figure attribute_histogram_plots\n",
    "UserWarning": "/usr/lib/python3/site-packages/sklearn/base.py:450: UserWarning: X does not have valid feature names\n  warnings.warn(\n",
    "R warning": "Warning message:\nglm.fit: fitted probabilities numerically 0 or 1 occurred \n",
}


@pytest.mark.parametrize("noise", NOISE_LINES.values(), ids=NOISE_LINES.keys())
def test_noise_lines_never_reach_a_finding(noise: str) -> None:
    assert clean_output(noise + "test RMSE: 41424\n") == "test RMSE: 41424"
    step = Step(id="a", order=0, language="python", status="succeeded", code="x", label="timing", stdout=noise)
    assert key_findings([step]) == []


NOISE_VALUES = {
    "Altair chart": (
        "alt.Chart(cars).mark_point().encode(\n    x='Horsepower',\n    y='Displacement'\n)",
        "alt.Chart(...)",
    ),
    "figure": ("plt.plot(x, y)\nplt.show()", "<Figure size 432x288 with 1 Axes>"),
    "empty ax.plot()": ("ax.plot()", "[]"),
    "Line2D list": ("plt.plot(x, y)", "[<matplotlib.lines.Line2D at 0x7f9b8c0b1d30>]"),
    "object at": ("ada_sgd.partial_fit(X_std[0, :], y[0])", "<__main__.AdalineSGD at 0x127b2f280>"),
    "estimator": ("forest_reg", "RandomForestRegressor(random_state=42)"),
    "joblib.dump": (
        'joblib.dump(final_model, "my_california_housing_model.pkl")',
        "['my_california_housing_model.pkl']",
    ),
    "version": ("alt.__version__", "'6.0.0'"),
    "path": ("IMAGES_PATH", "PosixPath('images/end_to_end_project')"),
    "title text": ("plt.title('Revenue')", "Text(0.5, 1.0, 'Revenue')"),
    "numpy array": (
        "imputer.statistics_",
        "array([-118.51  ,   34.26  ,   29.    , 2125.    ,  434.    , 1167.    ,\n        408.    ,    3.5385])",
    ),
    "sparse matrix": (
        "housing_cat_1hot",
        "<16512x5 sparse matrix of type '<class 'numpy.float64'>'\n"
        "\twith 16512 stored elements in Compressed Sparse Row format>",
    ),
}


@pytest.mark.parametrize(("code", "value"), NOISE_VALUES.values(), ids=NOISE_VALUES.keys())
def test_noise_values_never_become_findings(code: str, value: str) -> None:
    as_result = Step(id="a", order=0, language="python", status="succeeded", code=code, result=value)
    as_value = Step(
        id="b", order=1, language="python", status="succeeded", code=code, values=(Value(text=value, origin="result"),)
    )
    printed = Step(
        id="c", order=2, language="python", status="succeeded", code=f"print({code})", label="shown", stdout=value
    )
    assert key_findings([as_result]) == key_findings([as_value]) == key_findings([printed]) == []


def test_a_printed_numpy_array_is_not_a_table() -> None:
    step = Step(
        id="a",
        order=0,
        language="python",
        status="succeeded",
        code="print(confusion)",
        label="confusion",
        stdout="[[50  2  0]\n [ 3 45  2]\n [ 0  1 47]]\n",
    )
    assert all(finding.table is None for finding in key_findings([step]))


@pytest.mark.parametrize(
    "value",
    [
        "0.5623",
        "55",
        "TtestResult(statistic=2.31, pvalue=0.0213, df=98)",
        "(39574.03054635233, 43779.833703193224)",
        "Counter({'a': 3})",
    ],
)
def test_values_are_not_noise(value: str) -> None:
    assert not noise_value(value)


# Rscript -e 'fit <- lm(mpg ~ wt, data=mtcars); print(summary(fit)); print(nrow(mtcars))' (R 4.x), verbatim
LM_PRINTED = (
    "\nCall:\nlm(formula = mpg ~ wt, data = mtcars)\n\nResiduals:\n    Min      1Q  Median      3Q     Max \n"
    "-4.5432 -2.3647 -0.1252  1.4096  6.8727 \n\nCoefficients:\n            Estimate Std. Error t value Pr(>|t|)    \n"
    "(Intercept)  37.2851     1.8776  19.858  < 2e-16 ***\nwt           -5.3445     0.5591  -9.559 1.29e-10 ***\n---\n"
    "Signif. codes:  0 ‘***’ 0.001 ‘**’ 0.01 ‘*’ 0.05 ‘.’ 0.1 ‘ ’ 1\n\n"
    "Residual standard error: 3.046 on 30 degrees of freedom\n"
    "Multiple R-squared:  0.7528,\tAdjusted R-squared:  0.7446 \nF-statistic: 91.38 on 1 and 30 DF,  p-value: 1.294e-10\n\n"
    "[1] 32\n"
)


def test_a_printed_r_model_summary_is_a_finding_with_its_coefficients_and_fit() -> None:
    fitted = Step(
        id="a",
        order=0,
        language="r",
        status="succeeded",
        cell=4,
        stdout=LM_PRINTED,
        code="fit <- lm(mpg ~ wt, data=mtcars)\nprint(summary(fit))\nprint(nrow(mtcars))",
    )
    others = [
        Step(id=f"b{n}", order=n, language="r", status="succeeded", code=f"length(x{n})", result=str(n), cell=n + 4)
        for n in range(1, 4)
    ]
    [finding] = key_findings([fitted, *others], limit=1)
    assert finding.cell == 4
    assert finding.table is not None and finding.table[0][1:] == ("Estimate", "Std. Error", "t value", "Pr(>|t|)")
    assert [row[0] for row in finding.table[1:]] == ["(Intercept)", "wt"]  # not cut after the intercept
    assert "Multiple R-squared: 0.7528" in finding.text.splitlines() and "p-value: 1.294e-10" in finding.text
    assert "Signif. codes" not in finding.text and "Call:" not in finding.text


@pytest.mark.parametrize(
    ("language", "code", "printed"),
    [
        (
            "python",
            'print("Welcome to Machine Learning!")',
            "Welcome to Machine Learning!\n",
        ),  # handson-ml3 ch. 2, cell 4
        (
            "r",
            "print('Hello world! Love, R in Jupyter.')",
            '[1] "Hello world! Love, R in Jupyter."\n',
        ),  # IRkernel's Demo
    ],
)
def test_a_message_the_code_prints_is_not_a_finding(language: str, code: str, printed: str) -> None:
    step = Step(id="a", order=0, language=language, status="succeeded", code=code, label="hello", stdout=printed)
    assert key_findings([step]) == []


def test_pandas_reprs_are_summarised_not_dropped_as_reprs() -> None:
    printed = "DatetimeIndex(['2015-07-01', '2015-07-02', '2015-07-03', '2015-07-06', '2015-07-07'], dtype='datetime64[ns]', freq='B')\n"
    step = Step(
        id="a", order=0, language="python", status="succeeded", code="print(dates)", label="dates", stdout=printed
    )
    assert [f.text for f in key_findings([step])] == ["dates: DatetimeIndex of 5 dates, 2015-07-01 to 2015-07-07"]


@pytest.mark.parametrize("value", ["3/4", "2023/01/05"])
def test_a_ratio_or_a_date_is_not_a_path(value: str) -> None:
    assert not noise_value(value)
