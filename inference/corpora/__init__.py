"""Reading the corpora and study files that both the app and training use; nothing here trains or serves."""
