//! As root, the programs Deskhand starts for the agent outside the sandbox (its shell, plugin
//! servers, the proof-of-done check) would share Deskhand's user and could read its memory
//! through `/proc/PID/mem` or `ptrace`, keys included. They lose `CAP_SYS_PTRACE` instead:
//! from the bounding set (so no program they run gets it back) and from their own sets. A
//! process without it may not trace one with more capabilities than its own, which Deskhand
//! as root has.
//!
//! A normal user's processes have no capability to lose; the kernel's own rules (and Yama's
//! `ptrace_scope`, where it is on) are what stand between them.

/// `CAP_SYS_PTRACE` (linux/capability.h).
const CAP_SYS_PTRACE: u32 = 19;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `command`'s program starts without `CAP_SYS_PTRACE` when Deskhand runs as root (the
/// spawn fails, saying why, if it cannot be dropped); otherwise it is left as it is.
pub fn drop_ptrace(command: &mut tokio::process::Command) {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    // SAFETY: the hook runs in the forked child before exec; it makes only prctl and capget/
    // capset calls on stack memory, and allocates nothing.
    unsafe {
        command.pre_exec(|| drop_in_this_process());
    }
}

/// Drops `CAP_SYS_PTRACE` from this process's bounding, ambient, effective, permitted and
/// inheritable sets.
unsafe fn drop_in_this_process() -> std::io::Result<()> {
    let error = std::io::Error::last_os_error;
    unsafe {
        let cap = CAP_SYS_PTRACE as libc::c_ulong;
        // Refused without CAP_SETPCAP; then it must already be out of the set.
        if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
            && libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) != 0
        {
            return Err(error());
        }
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_LOWER, cap, 0, 0);
        let mut header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let mut data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
            return Err(error());
        }
        let bit = !(1u32 << CAP_SYS_PTRACE);
        data[0].effective &= bit;
        data[0].permitted &= bit;
        data[0].inheritable &= bit;
        if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return Err(error());
        }
    }
    Ok(())
}
