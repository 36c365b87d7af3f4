"""nbval runs every chapter; a chapter may only be skipped by listing it here with a reason."""

EXCLUDED = {
    # "NN-name.ipynb": "why it cannot run under nbval",
}

collect_ignore = list(EXCLUDED)
