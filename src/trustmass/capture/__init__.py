"""Stage: capture of sampled attention rows, keys, values and side statistics from one prefill."""
