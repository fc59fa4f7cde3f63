//! Server logs, and showing them when a test fails.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

pub(crate) const SERVERS: [&str; 3] = ["etcd", "kube-apiserver", "kube-controller-manager"];
const TAIL_LINES: usize = 40;
/// Enough for the tail even with long structured log lines, without reading
/// a whole busy apiserver log inside a panic.
const TAIL_BYTES: u64 = 64 * 1024;

static LOG_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

pub(crate) fn log_file(log_dir: &Path, server: &str) -> PathBuf {
    log_dir.join(format!("{server}.log"))
}

/// Registers `log_dir` to be shown on panic, installing the hook on first use.
pub(crate) fn show_on_panic(log_dir: &Path) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            print_tails();
        }));
    });
    lock().push(log_dir.to_owned());
}

pub(crate) fn forget(log_dir: &Path) {
    lock().retain(|dir| dir != log_dir);
}

fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LOG_DIRS.lock().unwrap_or_else(|e| e.into_inner())
}

fn print_tails() {
    // try_lock: a panic while this thread holds the lock must not deadlock.
    let dirs = match LOG_DIRS.try_lock() {
        Ok(dirs) => dirs.clone(),
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().clone(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    for dir in dirs {
        eprintln!("{}", tails(&dir));
    }
}

/// The last lines of every server log in `log_dir`, with their paths.
pub(crate) fn tails(log_dir: &Path) -> String {
    let mut out = String::new();
    for server in SERVERS {
        let path = log_file(log_dir, server);
        if !path.exists() {
            continue;
        }
        out.push_str(&format!(
            "----- last {TAIL_LINES} lines of {} -----\n",
            path.display()
        ));
        match tail(&path, TAIL_LINES) {
            Ok(text) => out.push_str(&text),
            Err(e) => out.push_str(&format!("(cannot read: {e})\n")),
        }
    }
    out
}

pub(crate) fn tail(path: &Path, lines: usize) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    // A partial first line is cut by the seek, and is dropped unless it is all there is.
    let skip_partial = usize::from(start > 0 && all.len() > 1);
    let from = all.len().saturating_sub(lines).max(skip_partial);
    let mut out = all[from..].join("\n");
    out.push('\n');
    Ok(out)
}
