"""R's values as a report reads them (issue 34, item 2): printed model summaries and tests as
tables and named values with their headers, and IRkernel's ``display_data`` bundles.

The printed fixtures are R's own output, pasted verbatim: each was produced by
``Rscript -e '<call>'`` with R 4.2.2 (the call is named above each). The IRkernel bundles are
verbatim saved outputs of public notebooks run with IRkernel (its ``repr`` package writes them;
neither is installed here), named above each.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from nini.report.rvalues import latex_text, r_plain, r_printed
from nini.report.values import output_values, printed_values
from tests.timeouts import timeout

# Rscript -e 'summary(lm(mpg ~ wt + hp, data=mtcars))'
LM = (
    "\n"
    "Call:\n"
    "lm(formula = mpg ~ wt + hp, data = mtcars)\n"
    "\n"
    "Residuals:\n"
    "   Min     1Q Median     3Q    Max \n"
    "-3.941 -1.600 -0.182  1.050  5.854 \n"
    "\n"
    "Coefficients:\n"
    "            Estimate Std. Error t value Pr(>|t|)    \n"
    "(Intercept) 37.22727    1.59879  23.285  < 2e-16 ***\n"
    "wt          -3.87783    0.63273  -6.129 1.12e-06 ***\n"
    "hp          -0.03177    0.00903  -3.519  0.00145 ** \n"
    "---\n"
    "Signif. codes:  0 ‘***’ 0.001 ‘**’ 0.01 ‘*’ 0.05 ‘.’ 0.1 ‘ ’ 1\n"
    "\n"
    "Residual standard error: 2.593 on 29 degrees of freedom\n"
    "Multiple R-squared:  0.8268,\tAdjusted R-squared:  0.8148 \n"
    "F-statistic: 69.21 on 2 and 29 DF,  p-value: 9.109e-12\n"
    "\n"
)

# Rscript -e 'summary(glm(am ~ wt, family=binomial, data=mtcars))'
GLM = (
    "\n"
    "Call:\n"
    "glm(formula = am ~ wt, family = binomial, data = mtcars)\n"
    "\n"
    "Deviance Residuals: \n"
    "     Min        1Q    Median        3Q       Max  \n"
    "-2.11400  -0.53738  -0.08811   0.26055   2.19931  \n"
    "\n"
    "Coefficients:\n"
    "            Estimate Std. Error z value Pr(>|z|)   \n"
    "(Intercept)   12.040      4.510   2.670  0.00759 **\n"
    "wt            -4.024      1.436  -2.801  0.00509 **\n"
    "---\n"
    "Signif. codes:  0 ‘***’ 0.001 ‘**’ 0.01 ‘*’ 0.05 ‘.’ 0.1 ‘ ’ 1\n"
    "\n"
    "(Dispersion parameter for binomial family taken to be 1)\n"
    "\n"
    "    Null deviance: 43.230  on 31  degrees of freedom\n"
    "Residual deviance: 19.176  on 30  degrees of freedom\n"
    "AIC: 23.176\n"
    "\n"
    "Number of Fisher Scoring iterations: 6\n"
    "\n"
)

# Rscript -e 'anova(lm(mpg ~ wt + hp, data=mtcars))'
ANOVA = (
    "Analysis of Variance Table\n"
    "\n"
    "Response: mpg\n"
    "          Df Sum Sq Mean Sq F value    Pr(>F)    \n"
    "wt         1 847.73  847.73 126.041 4.488e-12 ***\n"
    "hp         1  83.27   83.27  12.381  0.001451 ** \n"
    "Residuals 29 195.05    6.73                      \n"
    "---\n"
    "Signif. codes:  0 ‘***’ 0.001 ‘**’ 0.01 ‘*’ 0.05 ‘.’ 0.1 ‘ ’ 1\n"
)

# Rscript -e 't.test(mpg ~ am, data=mtcars)'
T_TEST = (
    "\n"
    "\tWelch Two Sample t-test\n"
    "\n"
    "data:  mpg by am\n"
    "t = -3.7671, df = 18.332, p-value = 0.001374\n"
    "alternative hypothesis: true difference in means between group 0 and group 1 is not equal to 0\n"
    "95 percent confidence interval:\n"
    " -11.280194  -3.209684\n"
    "sample estimates:\n"
    "mean in group 0 mean in group 1 \n"
    "       17.14737        24.39231 \n"
    "\n"
)

# Rscript -e 'print(aggregate(mpg ~ cyl, data=mtcars, FUN=mean))'
AGGREGATE = "  cyl      mpg\n1   4 26.66364\n2   6 19.74286\n3   8 15.10000\n"


# IRkernel's display_data of an R data.frame (``aictab(cand.set = models, modnames = model.names)``
# in a public Kaggle notebook, "AIC concept" on mtcars, run with IRkernel; verbatim).
AICTAB = {
    "text/html": [
        '<table class="dataframe">\n',
        "<caption>A aictab: 3 × 8</caption>\n",
        "<thead>\n",
        "\t<tr><th></th><th scope=col>Modnames</th><th scope=col>K</th><th scope=col>AICc</th><th scope=col>Delta_AICc</th>"
        "<th scope=col>ModelLik</th><th scope=col>AICcWt</th><th scope=col>LL</th><th scope=col>Cum.Wt</th></tr>\n",
        "\t<tr><th></th><th scope=col>&lt;chr&gt;</th><th scope=col>&lt;dbl&gt;</th><th scope=col>&lt;dbl&gt;</th>"
        "<th scope=col>&lt;dbl&gt;</th><th scope=col>&lt;dbl&gt;</th><th scope=col>&lt;dbl&gt;</th><th scope=col>&lt;dbl&gt;</th>"
        "<th scope=col>&lt;dbl&gt;</th></tr>\n",
        "</thead>\n",
        "<tbody>\n",
        "\t<tr><th scope=row>1</th><td>disp, hp, wt, qsec</td><td>6</td><td>162.4296</td><td> 0.000000</td><td>1.000000000</td>"
        "<td>0.830404924</td><td>-73.53480</td><td>0.8304049</td></tr>\n",
        "\t<tr><th scope=row>3</th><td>disp, wt          </td><td>4</td><td>165.6493</td><td> 3.219656</td><td>0.199921966</td>"
        "<td>0.166016185</td><td>-78.08389</td><td>0.9964211</td></tr>\n",
        "\t<tr><th scope=row>2</th><td>disp, qsec        </td><td>4</td><td>173.3233</td><td>10.893721</td><td>0.004309815</td>"
        "<td>0.003578891</td><td>-81.92092</td><td>1.0000000</td></tr>\n",
        "</tbody>\n",
        "</table>\n",
    ],
    "text/latex": [
        "A aictab: 3 × 8\n",
        "\\begin{tabular}{r|llllllll}\n",
        "  & Modnames & K & AICc & Delta\\_AICc & ModelLik & AICcWt & LL & Cum.Wt\\\\\n",
        "  & <chr> & <dbl> & <dbl> & <dbl> & <dbl> & <dbl> & <dbl> & <dbl>\\\\\n",
        "\\hline\n",
        "\t1 & disp, hp, wt, qsec & 6 & 162.4296 &  0.000000 & 1.000000000 & 0.830404924 & -73.53480 & 0.8304049\\\\\n",
        "\t3 & disp, wt           & 4 & 165.6493 &  3.219656 & 0.199921966 & 0.166016185 & -78.08389 & 0.9964211\\\\\n",
        "\t2 & disp, qsec         & 4 & 173.3233 & 10.893721 & 0.004309815 & 0.003578891 & -81.92092 & 1.0000000\\\\\n",
        "\\end{tabular}\n",
    ],
    "text/markdown": [
        "\n",
        "A aictab: 3 × 8\n",
        "\n",
        "| <!--/--> | Modnames &lt;chr&gt; | K &lt;dbl&gt; | AICc &lt;dbl&gt; | Delta_AICc &lt;dbl&gt; | ModelLik &lt;dbl&gt; | "
        "AICcWt &lt;dbl&gt; | LL &lt;dbl&gt; | Cum.Wt &lt;dbl&gt; |\n",
        "|---|---|---|---|---|---|---|---|---|\n",
        "| 1 | disp, hp, wt, qsec | 6 | 162.4296 |  0.000000 | 1.000000000 | 0.830404924 | -73.53480 | 0.8304049 |\n",
        "| 3 | disp, wt           | 4 | 165.6493 |  3.219656 | 0.199921966 | 0.166016185 | -78.08389 | 0.9964211 |\n",
        "| 2 | disp, qsec         | 4 | 173.3233 | 10.893721 | 0.004309815 | 0.003578891 | -81.92092 | 1.0000000 |\n",
        "\n",
    ],
    "text/plain": [
        "  Modnames           K AICc     Delta_AICc ModelLik    AICcWt      LL       \n",
        "1 disp, hp, wt, qsec 6 162.4296  0.000000  1.000000000 0.830404924 -73.53480\n",
        "3 disp, wt           4 165.6493  3.219656  0.199921966 0.166016185 -78.08389\n",
        "2 disp, qsec         4 173.3233 10.893721  0.004309815 0.003578891 -81.92092\n",
        "  Cum.Wt   \n",
        "1 0.8304049\n",
        "3 0.9964211\n",
        "2 1.0000000",
    ],
}

# IRkernel's display_data of a named numeric vector (a keras ``evaluate()`` result in a public
# Kaggle notebook run with IRkernel; verbatim). Its Markdown glues each value to the next name.
NAMED = {
    "text/html": [
        "<style>\n",
        ".dl-inline {width: auto; margin:0; padding: 0}\n",
        ".dl-inline>dt, .dl-inline>dd {float: none; width: auto; display: inline-block}\n",
        '.dl-inline>dt::after {content: ":\\0020"; padding-right: .5ex}\n',
        ".dl-inline>dt:not(:first-of-type) {padding-left: .5ex}\n",
        "</style><dl class=dl-inline><dt>loss</dt><dd>0.596700251102448</dd><dt>accuracy</dt><dd>0.859835207462311</dd></dl>\n",
    ],
    "text/latex": [
        "\\begin{description*}\n",
        "\\item[loss] 0.596700251102448\n",
        "\\item[accuracy] 0.859835207462311\n",
        "\\end{description*}\n",
    ],
    "text/markdown": ["loss\n", ":   0.596700251102448accuracy\n", ":   0.859835207462311\n", "\n"],
    "text/plain": ["     loss  accuracy \n", "0.5967003 0.8598352 "],
}

# IRkernel's display_data of a number (``mean(is.na(df_numerical$Sunshine))`` in a public Kaggle
# notebook run with IRkernel; verbatim): the plain text is rounded, the other forms are not.
SCALAR = {
    "text/html": ["0.4800976213392"],
    "text/latex": ["0.4800976213392"],
    "text/markdown": ["0.4800976213392"],
    "text/plain": ["[1] 0.4800976"],
}

# IRkernel's example-notebooks/Demo.ipynb (github.com/IRkernel/IRkernel, commit 124f234), the
# output of ``a + b``: a vector of 56 integers (its text/html and text/plain, verbatim).
VECTOR = {
    "text/html": [
        "<style>\n",
        ".list-inline {list-style: none; margin:0; padding: 0}\n",
        ".list-inline>li {display: inline-block}\n",
        '.list-inline>li:not(:last-child)::after {content: "\\00b7"; padding: 0 .5ex}\n',
        "</style>\n",
        (
            "<ol class=list-inline><li>12</li><li>13</li><li>14</li><li>15</li><li>16</li>"
            "<li>17</li><li>18</li><li>19</li><li>20</li><li>21</li><li>22</li><li>23</li>"
            "<li>24</li><li>25</li><li>26</li><li>27</li><li>28</li><li>29</li><li>30</li>"
            "<li>31</li><li>32</li><li>33</li><li>34</li><li>35</li><li>36</li><li>37</li>"
            "<li>38</li><li>39</li><li>40</li><li>41</li><li>42</li><li>43</li><li>44</li>"
            "<li>45</li><li>46</li><li>47</li><li>48</li><li>49</li><li>50</li><li>51</li>"
            "<li>52</li><li>53</li><li>54</li><li>55</li><li>56</li><li>57</li><li>58</li>"
            "<li>59</li><li>60</li><li>61</li><li>62</li><li>63</li><li>64</li><li>65</li>"
            "<li>66</li><li>67</li></ol>\n"
        ),
    ],
    "text/plain": [
        " [1] 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36\n",
        "[26] 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61\n",
        "[51] 62 63 64 65 66 67",
    ],
}

# IRkernel's example-notebooks/Display.ipynb (same commit), ``options('jupyter.plot_mimetypes')``: LaTeX.
PLOT_MIMETYPES_LATEX = [
    "\\textbf{\\$jupyter.plot\\_mimetypes} = \\begin{enumerate*}\n",
    "\\item 'text/plain'\n",
    "\\item 'image/png'\n",
    "\\end{enumerate*}\n",
]

AICTAB_TABLE = (
    ("", "Modnames", "K", "AICc", "Delta_AICc", "ModelLik", "AICcWt", "LL", "…"),
    ("1", "disp, hp, wt, qsec", "6", "162.4", "0", "1", "0.8304", "-73.53", "…"),
    ("3", "disp, wt", "4", "165.6", "3.22", "0.1999", "0.166", "-78.08", "…"),
    ("2", "disp, qsec", "4", "173.3", "10.89", "0.00431", "0.003579", "-81.92", "…"),
)  # 9 columns: the ninth (Cum.Wt) is cut, numbers rounded to four significant digits


def display(data: dict[str, list[str]], *keep: str) -> dict:
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {k: v for k, v in data.items() if not keep or k in keep},
    }


def test_an_lm_summary_is_its_coefficient_table_and_named_statistics() -> None:
    rest, values = printed_values(LM, "r")
    coefficients, *stats = values
    assert coefficients.name == "Coefficients" and coefficients.origin == "printed"
    assert coefficients.table == (
        ("", "Estimate", "Std. Error", "t value", "Pr(>|t|)"),
        ("(Intercept)", "37.23", "1.599", "23.29", "< 2e-16"),
        ("wt", "-3.878", "0.6327", "-6.129", "1.12e-06"),
        ("hp", "-0.03177", "0.00903", "-3.519", "0.00145"),
    )  # every coefficient, not cut after the intercept; the significance stars dropped
    assert [(value.name, value.text) for value in stats] == [
        ("Residual standard error", "2.593 on 29 degrees of freedom"),
        ("Multiple R-squared", "0.8268"),
        ("Adjusted R-squared", "0.8148"),
        ("F-statistic", "69.21 on 2 and 29 DF"),
        ("p-value", "9.109e-12"),
    ]
    assert rest.strip() == ""  # the call, residuals and signif. codes are not left as text lines


def test_a_glm_summary_keeps_its_z_values_deviances_and_aic() -> None:
    rest, values = printed_values(GLM, "r")
    assert values[0].table == (
        ("", "Estimate", "Std. Error", "z value", "Pr(>|z|)"),
        ("(Intercept)", "12.04", "4.510", "2.670", "0.00759"),
        ("wt", "-4.024", "1.436", "-2.801", "0.00509"),
    )
    assert [(value.name, value.text) for value in values[1:]] == [
        ("Null deviance", "43.230 on 31 degrees of freedom"),
        ("Residual deviance", "19.176 on 30 degrees of freedom"),
        ("AIC", "23.176"),
    ]
    assert rest.strip() == ""


def test_an_anova_table_keeps_its_header_and_the_residuals_row() -> None:
    rest, (anova,) = printed_values("Fit compared:\n" + ANOVA, "r")
    assert anova.name == "Analysis of Variance Table (mpg)"
    assert anova.table == (
        ("", "Df", "Sum Sq", "Mean Sq", "F value", "Pr(>F)"),
        ("wt", "1", "847.7", "847.7", "126", "4.488e-12"),
        ("hp", "1", "83.27", "83.27", "12.38", "0.001451"),
        ("Residuals", "29", "195.1", "6.73", "", ""),
    )
    assert rest.strip() == "Fit compared:"


def test_a_t_test_gives_its_statistic_interval_and_estimates_as_named_values() -> None:
    rest, values = printed_values(T_TEST, "r")
    assert [(value.name, value.text) for value in values] == [
        ("test", "Welch Two Sample t-test (mpg by am)"),
        ("t", "-3.7671"),
        ("df", "18.332"),
        ("p-value", "0.001374"),
        ("95 percent confidence interval", "-11.280194 to -3.209684"),
        ("mean in group 0", "17.14737"),
        ("mean in group 1", "24.39231"),
    ]
    assert all(value.origin == "printed" and value.table is None for value in values)
    assert rest.strip() == ""


def test_an_r_data_frame_printed_keeps_its_header() -> None:
    rest, (table,) = printed_values("Mean mpg by cylinders\n" + AGGREGATE, "r")
    assert table.table == (("", "cyl", "mpg"), ("1", "4", "26.66"), ("2", "6", "19.74"), ("3", "8", "15.1"))
    assert rest == "Mean mpg by cylinders"


def test_r_summaries_printed_by_rpy2_are_read_the_same() -> None:
    """A ``%%R`` cell prints through rpy2 into the Python kernel's stdout: the same text, the same values."""
    pytest.importorskip("rpy2.robjects")
    # in a process of its own, like the kernel a %%R cell runs in: R embedded in a test worker that
    # has loaded numpy's BLAS may fail to load its LAPACK routines
    printing = (
        "import rpy2.robjects as r\nprint('\\n'.join(r.r('capture.output(summary(lm(mpg ~ wt + hp, data=mtcars)))')))"
    )
    done = subprocess.run([sys.executable, "-c", printing], capture_output=True, text=True, timeout=timeout(120))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert printed_values(text, "python")[1] == printed_values(LM, "r")[1]


def test_text_without_r_output_costs_one_scan_and_is_left_as_it_is() -> None:
    text = "Estimated revenue: 42\n" * 50_000  # 1.1 MB, mentions "Estimate" but holds no R table
    assert r_printed(text) == (text.rstrip("\n"), [])


def test_an_irkernel_data_frame_is_a_table_from_its_html_or_its_markdown() -> None:
    (value,) = output_values(display(AICTAB), "r")
    assert value.table == AICTAB_TABLE and value.origin == "display"
    (from_markdown,) = output_values(display(AICTAB, "text/markdown", "text/latex", "text/plain"), "r")
    assert from_markdown.table == AICTAB_TABLE  # the <!--/--> corner and the <dbl> types removed


def test_an_irkernel_named_vector_is_named_text_from_its_html_or_latex() -> None:
    assert [v.text for v in output_values(display(NAMED), "r")] == [
        "loss: 0.596700251102448; accuracy: 0.859835207462311"
    ]
    latex = output_values(display(NAMED, "text/latex", "text/markdown", "text/plain"), "r")
    assert [v.text for v in latex] == ["loss: 0.596700251102448; accuracy: 0.859835207462311"]


def test_an_irkernel_number_is_its_full_value_and_plain_text_drops_the_index() -> None:
    assert [v.text for v in output_values(display(SCALAR), "r")] == ["0.4800976213392"]
    assert [v.text for v in output_values(display(SCALAR, "text/plain"), "r")] == ["0.4800976"]
    # sum(1:10) as IRkernel sends it (the shape of SCALAR): 55 is a value, not "no key findings"
    assert [v.text for v in output_values({"output_type": "display_data", "data": {"text/plain": "[1] 55"}}, "r")] == [
        "55"
    ]


def test_an_irkernel_vector_is_a_short_list() -> None:
    (value,) = output_values(display(VECTOR), "r")
    assert value.text == "12, 13, 14, 15, 16, 17, 18, 19, 20, 21, …"
    assert r_plain("".join(VECTOR["text/plain"])) == "12, 13, 14, 15, 16, 17, 18, 19, 20, 21, …"
    assert r_plain('[1] "this line is run / displayed"') == "this line is run / displayed"
    assert r_plain("Model fitted") is None
    # the same output's text/markdown (56 lines "1. 12" to "56. 67", then two blank lines: Demo.ipynb's, rebuilt)
    markdown = [f"{n}. {n + 11}\n" for n in range(1, 57)] + ["\n", "\n"]
    (listed,) = output_values(display({"text/markdown": markdown}), "r")
    assert listed.text == "12, 13, 14, 15, 16, 17, 18, 19, 20, 21, …"


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        ("".join(PLOT_MIMETYPES_LATEX), "text/plain, image/png"),
        (r"$\hat{\beta} = \frac{3}{4}$", "β = 3/4"),
        (r"\textbf{RMSE} = $0.52 \pm 0.03$", "RMSE = 0.52 ± 0.03"),
        (r"\textbackslash{}\%", "%"),
    ],
)
def test_latex_is_reduced_to_words_and_numbers(latex: str, text: str) -> None:
    assert latex_text(latex) == text


def test_latex_escapes_survive() -> None:
    assert latex_text(r"revenue \$1.2M, share 33\%, \textit{region\_name}") == "revenue $1.2M, share 33%, region_name"


def test_a_loop_of_tests_gives_a_bounded_number_of_values_and_keeps_the_rest_as_text() -> None:
    from nini.report.rvalues import MAX_VALUES

    rest, values = printed_values(T_TEST * 100, "r")
    assert len(values) == MAX_VALUES + 3  # whole tests are taken until the bound is passed
    assert rest.count("data:  mpg by am") == 100 - (MAX_VALUES + 3) // 7
    assert printed_values("data:  mpg by am\nno statistics here\n", "r") == ("data:  mpg by am\nno statistics here", [])


# Rscript -e 'coef(summary(lm(mpg ~ wt, data=mtcars)))'
COEF_MATRIX = (
    "             Estimate Std. Error   t value     Pr(>|t|)\n"
    "(Intercept) 37.285126   1.877627 19.857575 8.241799e-19\n"
    "wt          -5.344472   0.559101 -9.559044 1.293959e-10\n"
)


def test_a_coefficient_matrix_printed_alone_is_the_coefficients_table() -> None:
    rest, (value,) = printed_values("Slope of weight:\n" + COEF_MATRIX, "r")
    assert value.name == "Coefficients" and rest == "Slope of weight:"
    assert value.table == (
        ("", "Estimate", "Std. Error", "t value", "Pr(>|t|)"),
        ("(Intercept)", "37.29", "1.878", "19.86", "8.242e-19"),
        ("wt", "-5.344", "0.5591", "-9.559", "1.294e-10"),
    )
