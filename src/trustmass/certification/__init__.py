"""Stage: MISOCP certification of ES_pool on a stratified manifest, and the cap-widening sweep."""
