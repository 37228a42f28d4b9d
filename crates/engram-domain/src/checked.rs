//! [`Checked`]: caller input that [`crate::Memory`] has validated (limits, secrets), the only
//! form in which a store's write methods accept it. Only this crate can make one, so
//! "checked before a store sees it" holds by type, not by convention.

/// A value `Memory` has validated; a store reads it through `Deref` (or
/// [`Checked::into_inner`]). `Checked<&[NewNode]>`, `Checked<&str>`, …: it borrows what the
/// caller passed, so checking costs no copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked<T>(T);

impl<T> Checked<T> {
    /// Marks `value` as validated: for `Memory` (and the conformance suite) only.
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
