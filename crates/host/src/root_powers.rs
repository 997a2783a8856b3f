//! As root, the programs Deskhand starts for the agent outside the sandbox (its shell, plugin
//! servers, the proof-of-done check) would share Deskhand's user and its powers over the
//! whole machine. They lose the capabilities that reach into Deskhand and its terminal
//! ([`DROPPED`]): from the bounding set (so no program they run gets them back) and from
//! their own sets.
//! - `CAP_SYS_PTRACE`: a process without it may not trace, or read the memory of
//!   (`/proc/PID/mem`), one with more capabilities than its own, which Deskhand as root has.
//! - `CAP_SYS_ADMIN`: TIOCSTI (typing into a terminal) on a terminal that is not the
//!   caller's controlling one needs it; the person's terminal, where the CLI asks for
//!   approval, is never theirs (`processes` gives them a session of their own).
//! - `CAP_SYS_RAWIO`: `/proc/kcore` (all memory, Deskhand's included) and raw I/O ports.
//! - `CAP_SYS_MODULE`: a kernel module would undo every other rule.
//!
//! A normal user's processes have no capability to lose; the kernel's own rules (and Yama's
//! `ptrace_scope`, where it is on) are what stand between them.

/// The capabilities dropped (linux/capability.h numbers, all in the first 32-bit word).
const DROPPED: [u32; 4] = [
    16, // CAP_SYS_MODULE
    17, // CAP_SYS_RAWIO
    19, // CAP_SYS_PTRACE
    21, // CAP_SYS_ADMIN
];
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

/// `command`'s program starts without the [`DROPPED`] capabilities when Deskhand runs as root
/// (the spawn fails, saying why, if they cannot be dropped); otherwise it is left as it is.
pub fn drop_root_powers(command: &mut tokio::process::Command) {
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

/// Drops the [`DROPPED`] capabilities from this process's bounding, ambient, effective,
/// permitted and inheritable sets.
unsafe fn drop_in_this_process() -> std::io::Result<()> {
    let error = std::io::Error::last_os_error;
    unsafe {
        let mut kept = u32::MAX;
        for cap in DROPPED {
            kept &= !(1u32 << cap);
            let cap = cap as libc::c_ulong;
            // Refused without CAP_SETPCAP; then it must already be out of the set.
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
                && libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) != 0
            {
                return Err(error());
            }
            libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_LOWER, cap, 0, 0);
        }
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
        data[0].effective &= kept;
        data[0].permitted &= kept;
        data[0].inheritable &= kept;
        if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return Err(error());
        }
    }
    Ok(())
}
