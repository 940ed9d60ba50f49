# The R package's pkgdown site, built offline (run by docs/website/build_sites.py).
# Usage: Rscript docs/website/pkgdown_build.R <package folder> <destination>
args = commandArgs(trailingOnly = TRUE)
stopifnot(length(args) == 2L)
# pkgdown asks CRAN and Bioconductor whether the package is published (the
# home page's links) unless told there is no internet.
options(pkgdown.internet = FALSE)
# downlit links a function of another package through that package's URL;
# for a package that is not installed (mlr3, mlr3torch, torch here) it
# downloads CRAN's package database. Offline there is none: such names stay
# plain text instead of failing the build.
utils::assignInNamespace("CRAN_urls", function() data.frame(Package = character(), URL = character()),
                         "downlit")
# new_process = FALSE: the options above must hold in the process that builds.
# install = TRUE: examples and the vignette run against this tree's package,
# installed into a temporary library.
pkgdown::build_site(args[[1]], override = list(destination = normalizePath(args[[2]], mustWork = FALSE)),
                    preview = FALSE, new_process = FALSE, install = TRUE)
