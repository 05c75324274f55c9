"""The experiments of the paper (Külz et al.): experiment 1 (model generation) and 2 (configuration search)."""
