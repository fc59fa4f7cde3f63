//! A command the tests run to its end (helm, kubectl), with what it said.

use std::{
    io::Write,
    process::{Command, Stdio},
};

/// How a command ended, and what it wrote.
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` to its end, fed `stdin` if any.
pub fn run(cmd: &mut Command, stdin: Option<&str>) -> Ran {
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {:?}: {e}", cmd.get_program()));
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait");
    Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The stdout of a command that must succeed.
pub fn run_ok(cmd: &mut Command, stdin: Option<&str>) -> String {
    let what = format!("{cmd:?}");
    let ran = run(cmd, stdin);
    assert!(ran.ok, "{what} failed:\n{}{}", ran.stdout, ran.stderr);
    ran.stdout
}
