"""Model families, one folder each; every folder registers its family when
imported (`inference.core.family_folders.load_families` imports them all)."""
