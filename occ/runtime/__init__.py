"""What one process runs with: the composition root, the start-up wait, the scraped gauges."""
