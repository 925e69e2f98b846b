"""Model families, one folder each; every folder registers its family when
imported (`inference.core.family.load_families` imports them all)."""
