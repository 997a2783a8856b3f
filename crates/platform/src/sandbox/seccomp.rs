//! The system calls the sandbox's programs may not make, as a seccomp filter that bubblewrap
//! installs just before it starts the program (`--seccomp FD`). The list follows Flatpak's:
//! each call below either reaches past the sandbox's mounts and namespaces, or talks to a part
//! of the kernel a desktop program has no use for and which has had many holes. A denied call
//! fails with `EPERM`, as Flatpak's do, so a program sees "not allowed" rather than dying.
//!
//! The filter is compiled in Rust (`seccompiler`, a pure-Rust BPF compiler), once per process.

use std::collections::BTreeMap;
use std::io::{Seek as _, Write as _};
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// A call denied whatever its arguments, and why.
const DENIED: &[(i64, &str)] = &[
    // Opens any file of the file system by its handle, past every mount of the sandbox: how
    // a root process reads the host's disk from a container ("shocker").
    (libc::SYS_open_by_handle_at, "opens files past the mounts"),
    // Reads and writes other processes' memory.
    (libc::SYS_ptrace, "reads other processes' memory"),
    (libc::SYS_process_vm_readv, "reads other processes' memory"),
    (
        libc::SYS_process_vm_writev,
        "writes other processes' memory",
    ),
    // The kernel keyring is not namespaced: keys of the person's session live there.
    (
        libc::SYS_keyctl,
        "the kernel keyring is shared with the host",
    ),
    (
        libc::SYS_add_key,
        "the kernel keyring is shared with the host",
    ),
    (
        libc::SYS_request_key,
        "the kernel keyring is shared with the host",
    ),
    // New namespaces and mounts would undo the sandbox's own.
    (libc::SYS_unshare, "new namespaces"),
    (libc::SYS_setns, "joins other namespaces"),
    (libc::SYS_mount, "mounts"),
    (libc::SYS_umount2, "unmounts the sandbox's mounts"),
    (libc::SYS_pivot_root, "changes the root"),
    (libc::SYS_chroot, "changes the root"),
    (libc::SYS_open_tree, "mounts (new mount API)"),
    (libc::SYS_move_mount, "mounts (new mount API)"),
    (libc::SYS_fsopen, "mounts (new mount API)"),
    (libc::SYS_fsconfig, "mounts (new mount API)"),
    (libc::SYS_fsmount, "mounts (new mount API)"),
    (libc::SYS_fspick, "mounts (new mount API)"),
    (libc::SYS_mount_setattr, "changes mounts (new mount API)"),
    // Parts of the kernel a desktop program does not need, with a long record of holes.
    (libc::SYS_bpf, "loads programs into the kernel"),
    (
        libc::SYS_perf_event_open,
        "profiles the kernel and other processes",
    ),
    (libc::SYS_userfaultfd, "a common way to win kernel races"),
    (libc::SYS_kexec_load, "replaces the kernel"),
    (libc::SYS_kexec_file_load, "replaces the kernel"),
    (libc::SYS_init_module, "loads kernel modules"),
    (libc::SYS_finit_module, "loads kernel modules"),
    (libc::SYS_delete_module, "unloads kernel modules"),
    (libc::SYS_syslog, "reads the kernel log"),
    (libc::SYS_acct, "process accounting of the host"),
    (libc::SYS_quotactl, "disk quotas of the host"),
    (
        libc::SYS_move_pages,
        "NUMA calls that reveal the host's memory layout",
    ),
    (
        libc::SYS_migrate_pages,
        "NUMA calls that reveal the host's memory layout",
    ),
    (
        libc::SYS_mbind,
        "NUMA calls that reveal the host's memory layout",
    ),
    (
        libc::SYS_get_mempolicy,
        "NUMA calls that reveal the host's memory layout",
    ),
    (
        libc::SYS_set_mempolicy,
        "NUMA calls that reveal the host's memory layout",
    ),
];

/// `ioctl` requests denied: both push input into the terminal the program runs in, which
/// runs them outside the sandbox once it exits (`--new-session` also guards against
/// `TIOCSTI`).
const DENIED_IOCTLS: &[(libc::Ioctl, &str)] = &[
    (libc::TIOCSTI, "types into the controlling terminal"),
    (libc::TIOCLINUX, "copies and pastes on the Linux console"),
];

/// `personality` values allowed (Flatpak's): the plain Linux one, the 32-bit one, and the
/// query. Others turn off address randomization (`ADDR_NO_RANDOMIZE`) or read-implies-exec.
const ALLOWED_PERSONALITIES: &[u64] = &[0, 0x0008, 0xffff_ffff];

/// x32 system calls (numbers with this bit) pass the architecture check of an x86_64
/// filter under other numbers: they are all refused (ENOSYS, as if x32 were off).
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("no seccomp filter for this processor ({0})")]
    Arch(String),
    #[error("the seccomp filter did not compile: {0}")]
    Compile(String),
    #[error("cannot hand the seccomp filter to bubblewrap: {0}")]
    Io(#[from] std::io::Error),
}

/// The compiled filter, as bubblewrap reads it: `struct sock_filter`s, back to back.
pub fn program() -> Result<&'static [u8], SeccompError> {
    static PROGRAM: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| compile().map_err(|e| e.to_string()))
        .as_deref()
        .map_err(|e| SeccompError::Compile(e.clone()))
}

/// The filter in a fresh in-memory file at offset 0, which the command that starts bubblewrap
/// passes on (its descriptor is closed on exec until the child clears that).
pub fn memfd() -> Result<OwnedFd, SeccompError> {
    let program = program()?;
    // SAFETY: memfd_create with a valid C string; the descriptor is owned below.
    let fd = unsafe { libc::memfd_create(c"deskhand-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let mut file = std::fs::File::from(fd);
    file.write_all(program)?;
    file.rewind()?;
    Ok(file.into())
}

fn compile() -> Result<Vec<u8>, SeccompError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| SeccompError::Arch(std::env::consts::ARCH.into()))?;
    let compile_error = |e: seccompiler::BackendError| SeccompError::Compile(e.to_string());
    let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(compile_error)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED
        .iter()
        .map(|(call, _why)| (*call, Vec::new()))
        .collect();
    let mut ioctls = Vec::new();
    for (request, _why) in DENIED_IOCTLS {
        let request = condition(1, SeccompCmpOp::Eq, *request)?;
        ioctls.push(SeccompRule::new(vec![request]).map_err(compile_error)?);
    }
    rules.insert(libc::SYS_ioctl, ioctls);
    let others = ALLOWED_PERSONALITIES
        .iter()
        .map(|allowed| condition(0, SeccompCmpOp::Ne, *allowed))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(
        libc::SYS_personality,
        vec![SeccompRule::new(others).map_err(compile_error)?],
    );
    // A new user namespace by `clone` (`unshare` is denied outright; `clone3`, whose flags a
    // filter cannot see, is held by bubblewrap's `--disable-userns`).
    let new_user = condition(
        0,
        SeccompCmpOp::MaskedEq(libc::CLONE_NEWUSER as u64),
        libc::CLONE_NEWUSER as u64,
    )?;
    rules.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![new_user]).map_err(compile_error)?],
    );
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(compile_error)?;
    let program: BpfProgram = filter.try_into().map_err(compile_error)?;
    Ok(to_bytes(&refuse_x32(program)))
}

/// `program` with the x32 calls refused right after its architecture check (its first three
/// instructions; every jump in it is relative and stays within its own part).
#[cfg(target_arch = "x86_64")]
fn refuse_x32(mut program: BpfProgram) -> BpfProgram {
    use seccompiler::sock_filter;
    const LOAD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_GE: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    let x32 = [
        sock_filter {
            code: LOAD_NR,
            jt: 0,
            jf: 0,
            k: 0, // seccomp_data.nr
        },
        sock_filter {
            code: JUMP_GE,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        },
    ];
    let rest = program.split_off(3);
    program.extend(x32);
    program.extend(rest);
    program
}

#[cfg(not(target_arch = "x86_64"))]
fn refuse_x32(program: BpfProgram) -> BpfProgram {
    program
}

/// The program as the kernel's `struct sock_filter` array (u16 code, u8 jt, u8 jf, u32 k).
fn to_bytes(program: &BpfProgram) -> Vec<u8> {
    program
        .iter()
        .flat_map(|op| {
            let mut bytes = Vec::with_capacity(8);
            bytes.extend(op.code.to_ne_bytes());
            bytes.push(op.jt);
            bytes.push(op.jf);
            bytes.extend(op.k.to_ne_bytes());
            bytes
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_compiles_to_whole_instructions() {
        let program = super::program().unwrap();
        assert!(!program.is_empty());
        assert_eq!(program.len() % 8, 0);
    }
}
