/*
 * The AppImage runtime: the executable at the front of Deskhand's AppImage (type 2,
 * https://github.com/AppImage/AppImageSpec). The official runtime and the tools that fetch it
 * (appimagetool, linuxdeploy, Tauri's bundler) are downloaded from GitHub, which our build
 * machines cannot reach, so package.sh builds this one from Debian packages (libsquashfuse,
 * libfuse3) instead.
 *
 * The file is this ELF program followed by a squashfs image of the AppDir, which starts where
 * the ELF ends (the end of its section header table). "AI\x02" at offset 8 marks it as a
 * type-2 AppImage (package.sh writes it). Started, it mounts the image with FUSE on a
 * temporary directory, runs AppRun from there with the arguments it was given and APPIMAGE,
 * APPDIR, ARGV0 and OWD set, passes on SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to it, unmounts
 * when AppRun exits and exits as AppRun did (one of those signals before AppRun starts: it
 * cleans up and exits by it). Without FUSE it extracts the image to a temporary directory
 * instead, says so in one line, and removes the directory afterwards.
 */
#define _GNU_SOURCE
#include <squashfuse/ll.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Update information for tools such as appimageupdatetool; the spec's place for it. Empty:
 * Deskhand has no update channel. */
__attribute__((section(".upd_info"), used, retain)) static const char update_info[1024];

static const char *self_name = "AppImage";

__attribute__((noreturn)) static void die(const char *fmt, const char *arg) {
    fprintf(stderr, "%s: ", self_name);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

static volatile pid_t child_pid;
/* A signal that came before AppRun started (while mounting or extracting): AppRun is then not
 * started at all, and the runtime cleans up and exits as that signal would have it. */
static volatile sig_atomic_t early_signal;

/* Where the squashfs image starts: the end of the ELF file, i.e. of its section header table,
 * which the linker puts last (as the official runtime computes it). */
static off_t elf_size(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open %s", path);
    unsigned char ident[EI_NIDENT];
    Elf64_Ehdr e64;
    Elf32_Ehdr e32;
    off_t size = -1;
    if (pread(fd, ident, sizeof ident, 0) == sizeof ident && memcmp(ident, ELFMAG, SELFMAG) == 0) {
        if (ident[EI_CLASS] == ELFCLASS64 && pread(fd, &e64, sizeof e64, 0) == sizeof e64)
            size = (off_t)e64.e_shoff + (off_t)e64.e_shentsize * e64.e_shnum;
        else if (ident[EI_CLASS] == ELFCLASS32 && pread(fd, &e32, sizeof e32, 0) == sizeof e32)
            size = (off_t)e32.e_shoff + (off_t)e32.e_shentsize * e32.e_shnum;
    }
    close(fd);
    if (size <= 0)
        die("%s is not an ELF file", path);
    return size;
}

/* Writes every file, directory and symlink of the image under `dest`, printing each path if
 * `verbose`. Returns 0, or -1 after saying what failed. */
static int extract(const char *image, off_t offset, const char *dest, int verbose) {
    sqfs fs;
    if (sqfs_open_image(&fs, image, (size_t)offset) != SQFS_OK)
        return -1;
    sqfs_traverse trv;
    const char *why = NULL;
    if (mkdir(dest, 0755) != 0 && errno != EEXIST)
        why = strerror(errno);
    else if (sqfs_traverse_open(&trv, &fs, sqfs_inode_root(&fs)) != SQFS_OK)
        why = "the image is damaged";
    if (why) {
        fprintf(stderr, "%s: cannot extract to %s: %s\n", self_name, dest, why);
        sqfs_destroy(&fs);
        sqfs_fd_close(fs.fd);
        return -1;
    }
    sqfs_err err = SQFS_OK;
    int failed = 0;
    char path[PATH_MAX];
    static char buf[1 << 17]; /* squashfs's block size */
    while (!early_signal && sqfs_traverse_next(&trv, &err)) {
        if (trv.dir_end)
            continue;
        if (strcmp(trv.entry.name, ".") == 0 || strcmp(trv.entry.name, "..") == 0 ||
            snprintf(path, sizeof path, "%s/%s", dest, trv.path) >= (int)sizeof path) {
            fprintf(stderr, "%s: bad path in the image: %s\n", self_name, trv.path);
            failed = 1;
            break;
        }
        if (verbose)
            puts(path);
        errno = 0; /* what a failed system call below leaves; 0 for a squashfs error */
        sqfs_inode inode;
        failed = sqfs_inode_get(&fs, &inode, trv.entry.inode) != SQFS_OK;
        mode_t mode = failed ? 0 : inode.base.mode & 07777;
        if (failed) {
            /* reported below */
        } else if (S_ISDIR(inode.base.mode)) {
            failed = mkdir(path, mode | 0700) != 0 && errno != EEXIST;
        } else if (S_ISLNK(inode.base.mode)) {
            size_t size = sizeof buf;
            unlink(path);
            errno = 0;
            failed = sqfs_readlink(&fs, &inode, buf, &size) != SQFS_OK || symlink(buf, path) != 0;
        } else if (S_ISREG(inode.base.mode)) {
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            failed = fd < 0;
            for (sqfs_off_t at = 0; !failed && at < (sqfs_off_t)inode.xtra.reg.file_size;) {
                sqfs_off_t n = sizeof buf;
                if ((sqfs_off_t)inode.xtra.reg.file_size - at < n)
                    n = (sqfs_off_t)inode.xtra.reg.file_size - at;
                failed = sqfs_read_range(&fs, &inode, at, &n, buf) != SQFS_OK || n <= 0 ||
                         write(fd, buf, (size_t)n) != n;
                at += n;
            }
            if (fd >= 0) {
                failed |= fchmod(fd, mode) != 0;
                failed |= close(fd) != 0;
            }
        }
        /* Devices, fifos and sockets have no place in an AppDir: skipped. */
        if (failed) {
            fprintf(stderr, "%s: cannot extract %s: %s\n", self_name, path,
                    errno ? strerror(errno) : "the image is damaged");
            break;
        }
    }
    if (err != SQFS_OK) {
        fprintf(stderr, "%s: the image is damaged\n", self_name);
        failed = 1;
    }
    sqfs_traverse_close(&trv);
    sqfs_destroy(&fs);
    sqfs_fd_close(fs.fd);
    return failed || early_signal ? -1 : 0;
}

/* Passes on a signal that a process sent (kill, a desktop's "quit"). One from the terminal
 * (Ctrl-C, a hangup) already reaches AppRun itself, which is in the same process group:
 * passing it on too would deliver it twice. */
static void on_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    if (child_pid <= 0)
        early_signal = sig;
    else if (info->si_code == SI_USER || info->si_code == SI_QUEUE)
        kill(child_pid, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* The forwarded signals, for sigprocmask. */
static sigset_t forwarded_set(void) {
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaddset(&set, forwarded[i]);
    return set;
}

/* From here on the forwarded signals neither kill the runtime half-way through a mount or an
 * extraction (leaving it behind) nor get lost: see on_signal. */
static void catch_signals(void) {
    struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
        sigaction(forwarded[i], &sa, NULL);
}

/* Runs `appdir`/AppRun with argv[first..] and the AppImage variables; returns its wait status.
 * Signals the runtime gets meanwhile go to AppRun, which decides when to exit. */
static int run_apprun(const char *appimage, const char *appdir, int argc, char **argv, int first) {
    char apprun[PATH_MAX], owd[PATH_MAX];
    if (snprintf(apprun, sizeof apprun, "%s/AppRun", appdir) >= (int)sizeof apprun) {
        fprintf(stderr, "%s: the path %s is too long\n", self_name, appdir);
        return 1 << 8;
    }
    setenv("APPIMAGE", appimage, 1);
    setenv("APPDIR", appdir, 1);
    setenv("ARGV0", argv[0], 1);
    if (getcwd(owd, sizeof owd))
        setenv("OWD", owd, 1);
    char **args = calloc((size_t)(argc - first + 2), sizeof *args);
    if (!args) {
        fprintf(stderr, "%s: out of memory\n", self_name);
        return 1 << 8;
    }
    args[0] = apprun;
    for (int i = first; i < argc; i++)
        args[i - first + 1] = argv[i];

    /* Held back until child_pid is known, so that none is lost in between. */
    sigset_t held = forwarded_set(), old;
    sigprocmask(SIG_BLOCK, &held, &old);
    if (early_signal) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        free(args);
        return early_signal; /* the wait status of a process killed by it */
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: cannot start %s: %s\n", self_name, apprun, strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        free(args);
        return 1 << 8;
    }
    if (pid == 0) {
        /* A signal held since the fork acts on this process as it would on AppRun, rather
         * than reaching the runtime's handler, which has no child to pass it to here. */
        for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
            signal(forwarded[i], SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execv(apprun, args);
        fprintf(stderr, "%s: cannot run %s: %s\n", self_name, apprun, strerror(errno));
        _exit(127);
    }
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    /* Reaped: its pid may be another process's from now on. */
    sigprocmask(SIG_BLOCK, &held, NULL);
    child_pid = 0;
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(args);
    return status;
}

/* Exits as AppRun did: with its status, or killed by the same signal. A signal that dumps
 * core (SIGSEGV, SIGABRT, ...) already left AppRun's core; the runtime exits 128 + the
 * signal, as a shell reports it, instead of dumping its own. */
__attribute__((noreturn)) static void exit_like(int status) {
    if (WIFSIGNALED(status)) {
        if (WCOREDUMP(status))
            exit(128 + WTERMSIG(status));
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
    }
    exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

__attribute__((noreturn)) static void extract_and_run(const char *appimage, off_t offset,
                                                      int argc, char **argv, int first) {
    char dir[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/appimage_extracted_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        die("cannot make a temporary directory in %s", tmp && *tmp ? tmp : "/tmp");
    int status = 1 << 8; /* exit status 1 */
    if (extract(appimage, offset, dir, 0) == 0)
        status = run_apprun(appimage, dir, argc, argv, first);
    else if (early_signal)
        status = early_signal;
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    exit_like(status);
}

static struct fuse_session *session;
static pthread_t server;

static void *serve(void *unused) {
    (void)unused;
    fuse_session_loop(session);
    return NULL;
}

/* SIGUSR1 only interrupts the server's read of /dev/fuse (no SA_RESTART), so that its loop
 * sees it is to stop. */
static void wake(int sig) { (void)sig; }

/* Stops the server, then unmounts: libfuse's unmount closes /dev/fuse first, and a server
 * still reading it would report a bad file descriptor, or read whatever file gets its
 * number next. */
static void unmount_image(const char *mnt) {
    fuse_session_exit(session);
    struct timespec until;
    do {
        pthread_kill(server, SIGUSR1);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000 * 1000;
        if (until.tv_nsec >= 1000 * 1000 * 1000) {
            until.tv_sec++;
            until.tv_nsec -= 1000 * 1000 * 1000;
        }
    } while (pthread_timedjoin_np(server, NULL, &until) == ETIMEDOUT);
    fuse_session_unmount(session);
    fuse_session_destroy(session);
    rmdir(mnt);
}

/* Mounts the image read-only on a new directory and serves it from a thread; -1 (the
 * directory removed again) if FUSE is not there or the mount fails, with the reason in
 * `why`. */
static int mount_image(const char *appimage, off_t offset, char *mnt, char *why,
                       size_t why_size) {
    if (access("/dev/fuse", R_OK | W_OK) != 0) {
        snprintf(why, why_size, "/dev/fuse: %s", strerror(errno));
        return -1;
    }
    sqfs_ll *ll = sqfs_ll_open(appimage, (size_t)offset);
    if (!ll)
        die("cannot read the image in %s", appimage);
    fcntl(ll->fs.fd, F_SETFD, FD_CLOEXEC); /* AppRun has no use for it */
    const char *tmp = getenv("TMPDIR");
    char name[16];
    snprintf(name, sizeof name, "%.6s", self_name);
    snprintf(mnt, PATH_MAX, "%s/.mount_%sXXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(mnt))
        die("cannot make a mount point in %s", tmp && *tmp ? tmp : "/tmp");

    static struct fuse_lowlevel_ops ops = {
        .getattr = sqfs_ll_op_getattr,
        .opendir = sqfs_ll_op_opendir,
        .releasedir = sqfs_ll_op_releasedir,
        .readdir = sqfs_ll_op_readdir,
        .lookup = sqfs_ll_op_lookup,
        .open = sqfs_ll_op_open,
        .create = sqfs_ll_op_create,
        .release = sqfs_ll_op_release,
        .read = sqfs_ll_op_read,
        .readlink = sqfs_ll_op_readlink,
        .listxattr = sqfs_ll_op_listxattr,
        .getxattr = sqfs_ll_op_getxattr,
        .forget = sqfs_ll_op_forget,
        .statfs = stfs_ll_op_statfs,
    };
    char opts[PATH_MAX + 64];
    snprintf(opts, sizeof opts, "ro,nodev,nosuid,subtype=appimage,fsname=%s", self_name);
    for (char *c = opts + strlen(opts) - strlen(self_name); *c; c++)
        if (*c == ',' || *c == '\\')
            *c = '_'; /* option separators, not allowed in a file system's name */
    char *fuse_argv[] = {(char *)self_name, "-o", opts, NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
    sqfs_ll_chan ch;

    /* libfuse and fusermount3 explain a failed mount on stderr: keep that for `why`. */
    snprintf(why, why_size, "the mount failed");
    FILE *log = tmpfile();
    int saved = dup(STDERR_FILENO);
    if (log && saved >= 0)
        dup2(fileno(log), STDERR_FILENO);
    sqfs_err err = sqfs_ll_mount(&ch, mnt, &args, &ops, sizeof ops, ll);
    if (log && saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
        rewind(log);
        char line[512];
        if (fgets(line, sizeof line, log) && line[0] != '\n') {
            line[strcspn(line, "\n")] = 0;
            snprintf(why, why_size, "%s", line);
        }
        fclose(log);
    }
    fuse_opt_free_args(&args);
    if (err != SQFS_OK) {
        rmdir(mnt);
        return -1;
    }
    session = ch.session;
    struct sigaction sa = {.sa_handler = wake};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    /* The thread must not take the signals meant for AppRun. */
    sigset_t block = forwarded_set(), old;
    pthread_sigmask(SIG_BLOCK, &block, &old);
    if (pthread_create(&server, NULL, serve, NULL) != 0)
        die("%s", "cannot start the file system thread");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return 0;
}

static void usage(void) {
    printf("Deskhand AppImage. Without options it runs the app; these come first:\n"
           "  --appimage-extract               extract the contents to ./squashfs-root\n"
           "  --appimage-extract-and-run ARGS  extract to a temporary directory, run it there\n"
           "                                   with ARGS, and remove it (no FUSE needed)\n"
           "  --appimage-offset                print where the squashfs image starts\n"
           "  --appimage-help                  this help\n");
}

int main(int argc, char **argv) {
    char appimage[PATH_MAX];
    if (!realpath("/proc/self/exe", appimage))
        die("%s", "cannot find its own file (/proc/self/exe)");
    self_name = basename(strdup(appimage));
    off_t offset = elf_size(appimage);

    const char *option = argc > 1 && strncmp(argv[1], "--appimage-", 11) == 0 ? argv[1] : NULL;
    if (option && strcmp(option, "--appimage-offset") == 0) {
        printf("%lld\n", (long long)offset);
        return 0;
    }
    if (option && strcmp(option, "--appimage-help") == 0) {
        usage();
        return 0;
    }
    if (option && strcmp(option, "--appimage-extract") == 0)
        return extract(appimage, offset, "squashfs-root", 1) == 0 ? 0 : 1;
    if (option && strcmp(option, "--appimage-extract-and-run") == 0) {
        catch_signals();
        extract_and_run(appimage, offset, argc, argv, 2);
    }
    if (option)
        die("unknown option %s (see --appimage-help)", option);

    catch_signals();
    char mnt[PATH_MAX], why[512];
    if (mount_image(appimage, offset, mnt, why, sizeof why) != 0) {
        fprintf(stderr, "%s: cannot mount with FUSE (%s); running from a temporary extraction "
                        "instead\n", self_name, why);
        extract_and_run(appimage, offset, argc, argv, 1);
    }
    int status = run_apprun(appimage, mnt, argc, argv, 1);
    unmount_image(mnt);
    exit_like(status);
}
