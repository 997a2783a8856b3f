//! Keeping secrets out of reach of the programs the agent runs. The shell, plugin servers and
//! checks never inherit a secret variable (`program_env`), but they run as the same user as
//! Deskhand, so without more they could read it from Deskhand itself:
//! `cat /proc/$PPID/environ`.
//!
//! [`protect_secrets`], first thing in `main`, makes the process non-dumpable (its `/proc`
//! files then belong to root, so the same user's other processes cannot read its
//! environment or memory) and blanks the bytes of every secret variable
//! (`program_env::is_secret`) where the kernel shows the environment from, which root can
//! still read; a value that is an absolute path (`SSH_AUTH_SOCK`) is no secret and is left
//! as it is (`program_env::is_secret_value`). A variable whose name marks it as a secret (the providers' keys, the API's
//! token, the delegates' tokens, `GITHUB_TOKEN`, …) is moved out of the environment into
//! memory here, readable through [`env_var`]; one that is a secret by its value only (a URL
//! with a password, such as a proxy the HTTP client reads) stays in the environment, in a
//! copy outside that block. The agent loop redacts every one of these values from whatever
//! it stores, shows or sends (`agent::redact`), in case one still finds a way out.

use std::ffi::CString;
use std::sync::OnceLock;

use crate::program_env;

/// What [`protect_secrets`] found at start.
#[derive(Default)]
struct Protected {
    /// Variables moved out of the environment, as the process started with them.
    taken: Vec<(String, String)>,
    /// The values of every secret variable, taken or left in the environment, that are
    /// secrets themselves (not paths: `program_env::is_secret_value`).
    values: Vec<String>,
}

static PROTECTED: OnceLock<Protected> = OnceLock::new();

/// Makes the process non-dumpable, blanks every secret variable in the environment block the
/// kernel shows, and takes those whose name marks them as secrets out of the environment
/// (readable afterwards through [`env_var`] only).
///
/// # Safety
/// Changes the environment: call it first thing in `main`, before any other thread exists.
pub unsafe fn protect_secrets() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_DUMPABLE takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    let mut protected = Protected::default();
    let secrets: Vec<_> = std::env::vars_os()
        .filter(|(name, value)| program_env::is_secret(name, value))
        .collect();
    for (name, value) in secrets {
        let (Some(name), Ok(value)) = (name.to_str(), value.into_string()) else {
            continue;
        };
        let hidden = program_env::is_secret_value(&value);
        if hidden {
            // SAFETY: the caller guarantees that no other thread exists yet.
            unsafe { blank_value(name) };
        }
        if program_env::is_secret_name(std::ffi::OsStr::new(name)) {
            // SAFETY: as above.
            unsafe { std::env::remove_var(name) };
            protected.taken.push((name.to_string(), value.clone()));
        } else {
            // A copy the environment keeps elsewhere: the blanked block is no longer it.
            // SAFETY: as above.
            unsafe { std::env::set_var(name, &value) };
        }
        if hidden {
            protected.values.push(value);
        }
    }
    let _ = PROTECTED.set(protected);
}

/// Overwrites the bytes of the variable's value with zeros where they are. For a variable
/// the process started with, that is the block `/proc/PID/environ` reads, which removing the
/// variable from the environment leaves as it was.
///
/// # Safety
/// No other thread may read or change the environment meanwhile.
unsafe fn blank_value(name: &str) {
    let Ok(name) = CString::new(name) else {
        return;
    };
    // SAFETY: `getenv` returns null or a pointer to the value's NUL-terminated bytes in
    // writable memory (the initial stack block, or memory `setenv` allocated); the bytes
    // before the NUL are overwritten, the length kept, and no one else uses them meanwhile.
    unsafe {
        let value = libc::getenv(name.as_ptr());
        if !value.is_null() {
            let length = libc::strlen(value);
            std::ptr::write_bytes(value, 0, length);
        }
    }
}

/// An environment variable; a secret variable that [`protect_secrets`] took is read from
/// where it keeps it.
pub fn env_var(name: &str) -> Option<String> {
    let taken = PROTECTED.get().and_then(|protected| {
        protected
            .taken
            .iter()
            .find(|(variable, _)| variable == name)
    });
    match taken {
        Some((_, value)) => Some(value.clone()),
        None => std::env::var(name).ok(),
    }
}

/// The values of the secret variables [`protect_secrets`] found, to redact wherever they
/// appear.
pub fn environment_secrets<'a>() -> impl Iterator<Item = &'a str> {
    PROTECTED
        .get()
        .into_iter()
        .flat_map(|protected| protected.values.iter().map(String::as_str))
}
