//! One definition per option enum: each closed set of choices — solver, start,
//! covariance, interval method, termination, difference method, verdict, policy — is written
//! once, with `coded_enum!`, as its variants, their stable codes and their stable names.
//! Everything else derives from that definition:
//!
//! * the C ABI's `HETREWARD_*` constants are checked against [`Coded::code`] at compile time
//!   and converted with [`Coded::from_code`] (`ffi/enums.rs`);
//! * the model file stores [`Coded::code`] (one byte) and reads it back with
//!   [`Coded::from_code`] (`io/model_file.rs`);
//! * reports, JSON and tables print [`Coded::name`]; the command line parses
//!   [`Coded::NAMES`] (its clap parser lives in the program, the library does not depend on
//!   clap).
//! * the C API names every code with [`Coded::C_NAMES`] (`hetreward_option_name`,
//!   `hetreward_option_at` in `ffi/enums.rs`), and the Go, Julia and Python bindings build
//!   their name tables from it when they load.
//!
//! Codes and names are a contract (ABI, file format, JSON): never renumber or rename a
//! variant; add new ones with new codes.

use crate::error::Result;

/// A closed set of choices with a stable code and a stable name per variant (written with
/// `coded_enum!`).
pub trait Coded: Copy + Eq + std::fmt::Debug + Sized + 'static {
    /// Every variant, in code order.
    const ALL: &'static [Self];
    /// The names of [`Coded::ALL`], in the same order.
    const NAMES: &'static [&'static str];
    /// The same names, NUL-terminated (what the C API's `hetreward_option_name` returns).
    const C_NAMES: &'static [&'static std::ffi::CStr];
    /// The stable code (C constant, model-file byte).
    fn code(self) -> u32;
    /// The stable name (reports, JSON, command line).
    fn name(self) -> &'static str;
    /// The variant with this code, if any.
    fn from_code(code: u32) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.code() == code)
    }
    /// Parses a name as produced by [`Coded::name`]; the error names the argument and lists
    /// the accepted names.
    fn from_name(name: &str) -> Result<Self>;
}

/// `"a, b or c"`: the accepted names of an error message.
#[doc(hidden)]
pub(crate) fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Defines an enum whose variants carry a stable code and name, and implements [`Coded`],
/// `Display` (the name) and `FromStr` ([`Coded::from_name`]) for it. The enum also gets
/// inherent `ALL`, `code`, `name`, `from_code` and `from_name`, so callers need not import the
/// trait.
///
/// ```ignore
/// coded_enum! {
///     /// Which algorithm minimises `L_n`.
///     pub enum SolverKind: "solver" (argument), "solver" (noun in messages) {
///         /// Damped Newton.
///         Newton = 0 => "newton",
///         /// The paper's Algorithm 1.
///         Agd = 1 => "agd",
///     }
/// }
/// ```
macro_rules! coded_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $arg:literal, $noun:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal => $vname:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        // A crate-private set need not use every generated item, and its methods are as
        // reachable as the enum itself.
        #[allow(dead_code, unreachable_pub)]
        impl $name {
            /// Every variant, in code order.
            pub const ALL: [Self; [$($code),+].len()] = [$(Self::$variant),+];
            /// The names of [`Self::ALL`], in the same order.
            pub const NAMES: [&'static str; [$($code),+].len()] = [$($vname),+];

            /// The stable code (C constant, model-file byte).
            pub const fn code(self) -> u32 {
                match self {
                    $( Self::$variant => $code, )+
                }
            }

            /// The stable name (reports, JSON, command line).
            pub const fn name(self) -> &'static str {
                match self {
                    $( Self::$variant => $vname, )+
                }
            }

            /// The variant with this code, if any.
            pub const fn from_code(code: u32) -> Option<Self> {
                match code {
                    $( $code => Some(Self::$variant), )+
                    _ => None,
                }
            }

            /// Parses a name as produced by [`Self::name`].
            pub fn from_name(name: &str) -> $crate::error::Result<Self> {
                Self::ALL.into_iter().find(|v| v.name() == name).ok_or_else(|| {
                    $crate::error::Error::invalid(
                        $arg,
                        format!(
                            concat!("unknown ", $noun, " `{}` (expected {})"),
                            name,
                            $crate::codes::one_of(&Self::NAMES)
                        ),
                    )
                })
            }
        }

        impl $crate::codes::Coded for $name {
            const ALL: &'static [Self] = &$name::ALL;
            const NAMES: &'static [&'static str] = &$name::NAMES;
            const C_NAMES: &'static [&'static std::ffi::CStr] = &[$(
                // A name with an inner NUL does not compile.
                match std::ffi::CStr::from_bytes_with_nul(concat!($vname, "\0").as_bytes()) {
                    Ok(name) => name,
                    Err(_) => panic!(concat!("a NUL inside the name ", $vname)),
                }
            ),+];
            fn code(self) -> u32 {
                $name::code(self)
            }
            fn name(self) -> &'static str {
                $name::name(self)
            }
            fn from_code(code: u32) -> Option<Self> {
                $name::from_code(code)
            }
            fn from_name(name: &str) -> $crate::error::Result<Self> {
                $name::from_name(name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::error::Error;
            fn from_str(s: &str) -> $crate::error::Result<Self> {
                Self::from_name(s)
            }
        }
    };
}
pub(crate) use coded_enum;

/// Checks a set's codes and names: codes are `0..len` in order (the C enums and the file
/// format index by them) and names are distinct.
#[cfg(test)]
pub(crate) fn check<T: Coded>() {
    for (i, v) in T::ALL.iter().enumerate() {
        assert_eq!(v.code(), i as u32, "{v:?}");
        assert_eq!(T::from_code(v.code()), Some(*v));
        assert_eq!(T::from_name(v.name()).unwrap(), *v);
        assert_eq!(T::NAMES[i], v.name());
        assert_eq!(T::C_NAMES[i].to_str(), Ok(v.name()));
    }
    assert_eq!(T::from_code(T::ALL.len() as u32), None);
    let mut names = T::NAMES.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), T::ALL.len());
    let err = T::from_name("no-such-name").unwrap_err();
    assert!(
        matches!(err, crate::error::Error::InvalidArgument { .. }),
        "{err}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_has_codes_in_order_and_distinct_names() {
        check::<crate::fit::SolverKind>();
        check::<crate::fit::InitKind>();
        check::<crate::fit::Termination>();
        check::<crate::covariance::CovarianceKind>();
        check::<crate::calibrate::IntervalMethod>();
        check::<crate::select::DiffMethod>();
        check::<crate::select::Verdict>();
        check::<crate::select::Policy>();
    }

    #[test]
    fn names_parse_and_print() {
        use crate::fit::SolverKind;
        assert_eq!("agd".parse::<SolverKind>().unwrap(), SolverKind::Agd);
        assert_eq!(SolverKind::Newton.to_string(), "newton");
        assert_eq!(
            "lbfgs".parse::<SolverKind>().unwrap_err().to_string(),
            "invalid `solver`: unknown solver `lbfgs` (expected newton or agd)"
        );
        assert_eq!(
            crate::covariance::CovarianceKind::from_name("x").unwrap_err().to_string(),
            "invalid `covariance`: unknown covariance kind `x` (expected expected, observed, robust or cluster)"
        );
    }

    #[test]
    fn one_of_lists_like_a_sentence() {
        assert_eq!(one_of(&["a"]), "a");
        assert_eq!(one_of(&["a", "b"]), "a or b");
        assert_eq!(one_of(&["a", "b", "c"]), "a, b or c");
    }
}
