"""What was measured and judged, shown as text, markdown, HTML, PNG and SVG."""
