//! Keeping API keys out of reach of the programs the agent runs. The shell and plugin
//! servers never inherit a key variable, but they run as the same user as Deskhand, so
//! without more they could read it from Deskhand itself: `cat /proc/$PPID/environ`.
//!
//! [`protect_keys`], first thing in `main`, makes the process non-dumpable (its `/proc`
//! files then belong to root, so the same user's other processes cannot read its
//! environment or memory) and moves the key variables out of the environment into memory
//! here, blanking their bytes where the kernel shows the environment from (which root can
//! still read). The agent loop redacts the keys from whatever it stores, shows or sends
//! (`agent::redact`), in case one still finds a way out.

use std::ffi::CString;
use std::sync::OnceLock;

use crate::secrets::PROVIDERS;

/// The key variables as the process started with them, once [`protect_keys`] took them.
static TAKEN: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();

/// Makes the process non-dumpable and takes every provider's key variable out of the
/// environment (readable afterwards through [`env_var`] only).
///
/// # Safety
/// Changes the environment: call it first thing in `main`, before any other thread exists.
pub unsafe fn protect_keys() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_DUMPABLE takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    let mut taken = Vec::new();
    for provider in PROVIDERS.iter() {
        let Some(value) = std::env::var_os(provider.env) else {
            continue;
        };
        // SAFETY: the caller guarantees that no other thread exists yet.
        unsafe { blank_value(provider.env) };
        // SAFETY: as above.
        unsafe { std::env::remove_var(provider.env) };
        if let Ok(value) = value.into_string() {
            taken.push((provider.env, value));
        }
    }
    let _ = TAKEN.set(taken);
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

/// An environment variable; a key variable that [`protect_keys`] took is read from where it
/// keeps it.
pub fn env_var(name: &str) -> Option<String> {
    let taken = TAKEN
        .get()
        .and_then(|taken| taken.iter().find(|(variable, _)| *variable == name));
    match taken {
        Some((_, value)) => Some(value.clone()),
        None => std::env::var(name).ok(),
    }
}

/// The keys [`protect_keys`] took from the environment, to redact wherever they appear.
pub fn environment_keys<'a>() -> impl Iterator<Item = &'a str> {
    TAKEN
        .get()
        .into_iter()
        .flatten()
        .map(|(_, value)| value.as_str())
}
