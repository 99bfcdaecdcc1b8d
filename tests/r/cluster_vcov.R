# The outside reference of tests/r_reference.rs: R's cluster-robust variances of a logistic
# regression without intercept, glm(y ~ 0 + z1 + ... + zk, family = binomial), on the CSV
# fixture named by the first argument (columns cluster, y, z1..zk); writes one line per
# estimate to the file named by the second: its name, then its k x k values row-major.
#
#   coef       the glm estimate (k values)
#   cl_hc0     sandwich::vcovCL(type = "HC0", cadjust = FALSE)   CR0
#   cl_hc1     sandwich::vcovCL(type = "HC1", cadjust = TRUE)    G/(G-1) (n-1)/(n-k) CR0
#   cr_cr0     clubSandwich::vcovCR(type = "CR0")
#   cr_cr1s    clubSandwich::vcovCR(type = "CR1S")               G (n-1) / ((G-1) (n-k)) CR0
#   cr_cr3     clubSandwich::vcovCR(type = "CR3")                sum_g (I - H_gg)^-1 adjusted
#   loo_jack   (G-1)/G sum_g (b_(g) - b_bar)(b_(g) - b_bar)^T    glm's leave-one-cluster-out refits
#   cr_cr2     clubSandwich::vcovCR(type = "CR2")                (reported, not compared)
#
# Fails (exit 1) when a package is missing: a reference that cannot run is a failed test.
suppressPackageStartupMessages({
  for (pkg in c("sandwich", "clubSandwich")) {
    if (!requireNamespace(pkg, quietly = TRUE)) {
      message("R package ", pkg, " is missing (Debian: r-cran-", tolower(pkg), ")")
      quit(status = 1)
    }
  }
})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
zs <- grep("^z[0-9]+$", names(d), value = TRUE)
form <- as.formula(paste("y ~ 0 +", paste(zs, collapse = " + ")))
control <- glm.control(epsilon = 1e-15, maxit = 200)
fit <- glm(form, family = binomial, data = d, control = control)
# Once more from the optimum: glm keeps the working weights (and the QR behind the bread) of
# its last iteration's start, which the deviance rule leaves one step (~1e-8) short of the
# optimum; started there, that step is ~1e-16 and every matrix is the optimum's.
fit <- glm(form, family = binomial, data = d, control = control, start = coef(fit))
if (!fit$converged) {
  message("glm did not converge")
  quit(status = 1)
}
cl <- d$cluster
out <- file(args[2], "w")
put <- function(name, v) {
  writeLines(paste(name, paste(sprintf("%.17g", as.vector(t(as.matrix(v)))), collapse = " ")),
             out)
}
put("coef", coef(fit))
put("cl_hc0", sandwich::vcovCL(fit, cluster = cl, type = "HC0", cadjust = FALSE))
put("cl_hc1", sandwich::vcovCL(fit, cluster = cl, type = "HC1", cadjust = TRUE))
put("cr_cr0", clubSandwich::vcovCR(fit, cluster = cl, type = "CR0"))
put("cr_cr1s", clubSandwich::vcovCR(fit, cluster = cl, type = "CR1S"))
put("cr_cr3", clubSandwich::vcovCR(fit, cluster = cl, type = "CR3"))
put("cr_cr2", clubSandwich::vcovCR(fit, cluster = cl, type = "CR2"))
# MacKinnon, Nielsen & Webb's CV3 from glm's exact refits without each cluster (sandwich 3.0.2,
# Debian bookworm's, has no jackknife estimator: vcovJK came with sandwich 3.1).
groups <- sort(unique(cl))
loo <- t(sapply(groups, function(g) {
  f <- glm(form, family = binomial, data = d[cl != g, ],
           control = glm.control(epsilon = 1e-15, maxit = 200))
  if (!f$converged) stop("a leave-one-cluster-out glm did not converge")
  coef(f)
}))
G <- length(groups)
put("loo_jack", (G - 1) / G * crossprod(scale(loo, center = TRUE, scale = FALSE)))
close(out)
