//! Integration tests of every variant through the `RateLimiter` trait.
