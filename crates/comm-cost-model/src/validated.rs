//! Validated deserialization for the types whose fields are public: serde builds the private
//! mirror of the fields, and `TryFrom` rebuilds the type and runs its `validate` method, so a
//! parsed value always passes the checks the crate's functions make (issue 13).

/// Declares `$fields`, the private serialized form of `$ty` (the listed fields, same names and
/// types), and `TryFrom<$fields> for $ty` through `$ty::validate`; the type then says
/// `#[serde(try_from = "$fields")]`.
macro_rules! deserialize_validated {
    ($ty:ident, $fields:ident { $($field:ident: $fty:ty),+ $(,)? }) => {
        #[derive(serde::Deserialize)]
        struct $fields {
            $($field: $fty),+
        }

        impl TryFrom<$fields> for $ty {
            type Error = $crate::InputError;

            fn try_from(f: $fields) -> Result<Self, Self::Error> {
                let value = Self { $($field: f.$field),+ };
                value.validate()?;
                Ok(value)
            }
        }
    };
}
