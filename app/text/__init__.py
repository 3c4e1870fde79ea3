"""The words of the pages: each page's fixed texts, and the sentences and tables it writes from an engine's numbers."""
