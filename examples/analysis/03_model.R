# In R: a linear model of revenue on units and product, and a ggplot of the fit per region.
# `df` is the sales dataset and datasets$region_summary the table Python saved in step 1.
library(ggplot2)

fit <- lm(revenue ~ units + product, data = df)
print(summary(fit))

shares <- datasets$region_summary
cat(sprintf("top region from Python's summary: %s (%.1f%% of revenue)\n",
            shares$region[1], 100 * shares$share[1]))

p <- ggplot(df, aes(x = units, y = revenue, colour = product)) +
  geom_point(alpha = 0.7) +
  geom_smooth(method = "lm", formula = y ~ x, se = FALSE) +
  facet_wrap(~ region) +
  labs(title = "Revenue against units sold, by region", x = "units", y = "revenue")
print(p)

coefs <- coef(summary(fit))
output_df <- data.frame(term = rownames(coefs), estimate = coefs[, "Estimate"],
                        p_value = coefs[, "Pr(>|t|)"], row.names = NULL)
result <- list(r_squared = round(summary(fit)$r.squared, 3), n = nobs(fit))
