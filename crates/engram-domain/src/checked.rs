//! [`Checked`]: caller input that the domain has validated (limits, secrets) before a
//! [`crate::Memory`] call reaches the store, the only form in which a store's write methods
//! accept it. Only this crate can make one, so "checked before a store sees it" holds by
//! type, not by convention.

/// A value the domain has validated (a request type's `check()`); a store reads it through
/// `Deref` (or [`Checked::into_inner`]). It wraps the request the caller passed
/// (`Checked<SetSummary>`, `Checked<ImportBatch>`, …), or borrows it (`Checked<&str>`), so
/// checking costs no copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked<T>(T);

impl<T> Checked<T> {
    /// Marks `value` as validated: for the domain's checks (and the conformance suite) only.
    pub(crate) fn new(value: T) -> Self {
        Self(value)
    }

    /// The value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Checked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}
