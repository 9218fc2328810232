"""What is computed once and stored: the feature cache (benchmark cases run through the detector), the
verifier and attribution caches, and the detector inputs derived from cached rows."""
