//! Published MoE training runs, the calibration of the compute efficiency and the held-out
//! error (filled in below).
