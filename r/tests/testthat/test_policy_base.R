# The policy registry and policy_may_recycle() are derived from the policies'
# own files, not kept by hand: adding a policy touches its file only.

# The policies whose methods of `generic` the package's code defines and
# registers (a test may register more at run time, e.g. test_policies.R).
registered_methods = function(generic) {
  ns = asNamespace("pystratum")
  methods = getNamespaceInfo(ns, "S3methods")
  classes = unique(methods[methods[, 1L] == generic, 2L])
  classes = classes[vapply(classes, function(cls) {
    exists(paste0(generic, ".", cls), envir = ns, inherits = FALSE)
  }, logical(1L))]
  sub("^pystratum_policy_", "", classes)
}

test_that("the known policies are the exported constructors with a policy_allocate() method", {
  known = known_policies()
  exported = grep("^policy_", getNamespaceExports("pystratum"), value = TRUE)
  expect_setequal(names(known), sub("^policy_", "", exported))
  expect_setequal(names(known), registered_methods("policy_allocate"))
  for (name in names(known)) {
    expect_identical(known[[name]], get(paste0("policy_", name), asNamespace("pystratum")),
      label = name)
  }
})

test_that("a policy defined by its own file alone is known and rebuilt from its parameters", {
  where = new.env(parent = asNamespace("pystratum"))
  list2env(as.list(asNamespace("pystratum"), all.names = TRUE), where)
  # What a file policy_halves.R would define: a constructor and its method.
  where$policy_halves = function(n = 2) new_policy("halves", list(n = n))
  where$policy_allocate.pystratum_policy_halves = function(policy, encoded, epoch) {
    list(cuts = cbind(0, encoded$sizes %/% 2, encoded$sizes))
  }
  known = known_policies(where)
  expect_setequal(names(known), c(names(known_policies()), "halves"))
  expect_identical(known$halves, where$policy_halves)
  # A constructor without a method, or a method without a constructor, is no policy.
  where$policy_lonely = function() new_policy("lonely", list())
  where$policy_allocate.pystratum_policy_orphan = function(policy, encoded, epoch) NULL
  expect_false(any(c("lonely", "orphan") %in% names(known_policies(where))))
})

test_that("policy_may_recycle() is FALSE unless a policy's own method says otherwise", {
  expect_false(policy_may_recycle(policy_min_per_stratum(2)))
  expect_false(policy_may_recycle(policy_fixed_size(8)))
  expect_false(policy_may_recycle(policy_classes_per_batch(2, 2)))
  expect_true(policy_may_recycle(policy_targets("balanced", 4)))
  # Downsample recycles as its base does.
  expect_true(policy_may_recycle(policy_downsample(c(a = 0.5), policy_targets("balanced", 4))))
  expect_false(policy_may_recycle(policy_downsample(c(a = 0.5), policy_fixed_size(8))))
  expect_false(policy_may_recycle(policy_downsample(c(a = 0.5), 2)))
  # A policy the package does not know (a user's class) does not recycle.
  expect_false(policy_may_recycle(structure(list(name = "mine", params = list()),
    class = c("pystratum_policy_mine", "pystratum_policy"))))
  expect_setequal(registered_methods("policy_may_recycle"), c("default", "targets", "downsample"))
})
