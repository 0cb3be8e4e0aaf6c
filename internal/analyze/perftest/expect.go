package perftest

// BWMinBytes is the smallest message size at which a run measures
// bandwidth rather than message rate: a best average at a smaller size is
// not held against a link rate.
const BWMinBytes = bwMinBytes
