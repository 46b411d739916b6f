# Revenue by region: a summary table, saved as the dataset "region_summary".
summary = (
    df.groupby("region", as_index=False)
    .agg(units=("units", "sum"), revenue=("revenue", "sum"))
    .sort_values("revenue", ascending=False)
)
summary["share"] = (summary["revenue"] / summary["revenue"].sum()).round(3)
print(summary.to_string(index=False))
output_df = summary
result = {"total_revenue": round(float(df["revenue"].sum()), 2), "top_region": summary.iloc[0]["region"]}
