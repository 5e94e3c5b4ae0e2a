//! Crash test of the embedded store: no acknowledged write is lost when the process dies.
//!
//! The same binary is parent and child (`harness = false`). The child opens an
//! [`EmbeddedStore`], writes from 32 tasks as fast as it can and prints one line per write
//! the store acknowledged. The parent kills it with SIGKILL at a random moment, reopens the
//! store and checks that every acknowledged write is there with its value at its revision,
//! and that revisions keep increasing across the crashes. `KAPI_CRASH_ROUNDS` sets the
//! number of rounds (default 20).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdout, Command, ExitCode, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};
use std::{env, fmt, thread};

use bytes::Bytes;
use kapi_storage::{
    EmbeddedConfig, EmbeddedStore, KeyValue, Revision, StorageError, Store, guaranteed_update,
};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, RngCore, SeedableRng};
use tokio::task::JoinSet;

/// The first argument that makes this binary run as the child.
const CHILD_ARG: &str = "--crash-child";
/// Rounds when `KAPI_CRASH_ROUNDS` is not set.
const DEFAULT_ROUNDS: u32 = 20;
/// Concurrent writer tasks in the child.
const WRITERS: usize = 32;
/// Keys every writer updates with compare-and-swap, across all rounds.
const SHARED_KEYS: usize = 8;
/// Every this many writes, a writer updates a shared key instead of creating a fresh one.
const UPDATE_EVERY: u64 = 4;
/// The child is killed only after this many acknowledgements, so every round writes.
const MIN_ACKS: usize = 200;
/// After `MIN_ACKS`, the child is killed after a random delay of up to this many milliseconds.
const MAX_KILL_DELAY_MS: u64 = 300;
/// How long the child may take to reach `MIN_ACKS` before the round fails.
const ACK_TIMEOUT: Duration = Duration::from_secs(30);
/// How many writes of earlier rounds are checked again in each round.
const RECHECK_SAMPLE: usize = 200;

/// Runs the child when called with [`CHILD_ARG`], else the parent. Other arguments (such as
/// the ones `cargo test` passes on) are ignored.
fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    match args.split_first() {
        Some((first, rest)) if first == CHILD_ARG => child_main(rest),
        _ => parent_main(),
    }
}

/// What an acknowledged write was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// The create of a fresh key, which nothing writes again.
    Create,
    /// A compare-and-swap update (or the first create) of a shared key.
    Update,
}

/// One write the store acknowledged, as the child prints it and the parent checks it.
#[derive(Clone, Debug)]
struct Ack {
    kind: Kind,
    key: String,
    revision: Revision,
    /// Determines the value written, see [`value_for`].
    seed: u64,
}

impl Ack {
    /// The line the child prints: `<c|u> <key> <revision> <seed>` and a newline.
    fn to_line(&self) -> String {
        let tag = match self.kind {
            Kind::Create => 'c',
            Kind::Update => 'u',
        };
        format!("{tag} {} {} {}\n", self.key, self.revision, self.seed)
    }

    /// Parses a line printed by [`Ack::to_line`] (without its newline).
    fn parse(line: &str) -> Result<Ack, String> {
        let bad = || format!("malformed acknowledgement line {line:?}");
        let fields: Vec<&str> = line.split(' ').collect();
        let [tag, key, revision, seed] = fields[..] else {
            return Err(bad());
        };
        let kind = match tag {
            "c" => Kind::Create,
            "u" => Kind::Update,
            _ => return Err(bad()),
        };
        Ok(Ack {
            kind,
            key: key.to_owned(),
            revision: revision.parse().map_err(|_| bad())?,
            seed: seed.parse().map_err(|_| bad())?,
        })
    }
}

impl fmt::Display for Ack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Create => "create",
            Kind::Update => "update",
        };
        write!(
            f,
            "{kind} of {} acknowledged at revision {}",
            self.key, self.revision
        )
    }
}

/// The value written with `seed`: 10 B to 8 KiB of pseudo-random bytes. Parent and child
/// derive it the same way, so a line only needs to carry the seed.
fn value_for(seed: u64) -> Bytes {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut value = vec![0; rng.random_range(10..=8192)];
    rng.fill_bytes(&mut value);
    value.into()
}

/// The shared key number `i`, updated in every round.
fn shared_key(i: usize) -> String {
    format!("/registry/crash/shared/{i}")
}

// ---------------------------------------------------------------------------------------
// Child
// ---------------------------------------------------------------------------------------

/// The child: `--crash-child <data-dir> <round>`. Writes until killed.
fn child_main(args: &[String]) -> ExitCode {
    let [dir, round] = args else {
        eprintln!("crash child: expected <data-dir> <round>, got {args:?}");
        return ExitCode::FAILURE;
    };
    let Ok(round) = round.parse::<u32>() else {
        eprintln!("crash child: bad round {round:?}");
        return ExitCode::FAILURE;
    };
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(write_until_killed(PathBuf::from(dir), round))
}

/// Opens the store and runs [`WRITERS`] writer tasks; returns only on failure.
async fn write_until_killed(dir: PathBuf, round: u32) -> ExitCode {
    let store = match EmbeddedStore::open(EmbeddedConfig::new(dir)) {
        Ok(store) => Arc::new(store),
        Err(err) => {
            eprintln!("crash child: round {round}: opening the store: {err}");
            return ExitCode::FAILURE;
        }
    };
    let lines = spawn_printer();
    let mut writers = JoinSet::new();
    for task in 0..WRITERS {
        writers.spawn(write_forever(store.clone(), round, task, lines.clone()));
    }
    // Writers run until the process is killed; one ending means it failed.
    let ended = writers.join_next().await;
    eprintln!("crash child: round {round}: a writer ended: {ended:?}");
    ExitCode::FAILURE
}

/// Starts the one thread that writes to stdout, so lines are never interleaved; each line is
/// flushed at once, so the parent sees every acknowledgement before the kill. Exits the
/// process when stdout is gone (the parent died), so no child writes on unobserved.
fn spawn_printer() -> mpsc::Sender<String> {
    let (sender, receiver) = mpsc::channel::<String>();
    thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        for line in receiver {
            if stdout
                .write_all(line.as_bytes())
                .and_then(|()| stdout.flush())
                .is_err()
            {
                std::process::exit(1);
            }
        }
    });
    sender
}

/// One writer: creates fresh keys and every [`UPDATE_EVERY`]th write updates a random shared
/// key, sending each acknowledged write to the printer only after the store returned `Ok`.
/// Exits the process on any store error, which the parent reports as an early exit.
async fn write_forever(
    store: Arc<EmbeddedStore>,
    round: u32,
    task: usize,
    lines: mpsc::Sender<String>,
) {
    for n in 0u64.. {
        let seed = rand::random::<u64>();
        let ack = if n % UPDATE_EVERY == UPDATE_EVERY - 1 {
            let key = shared_key(rand::random_range(0..SHARED_KEYS));
            update_shared(&*store, key, seed).await
        } else {
            let key = format!("/registry/crash/r{round}/w{task}/{n}");
            create(&*store, key, seed).await
        };
        match ack {
            Ok(ack) => lines.send(ack.to_line()).expect("printer thread alive"),
            Err(err) => {
                eprintln!("crash child: round {round}, writer {task}: {err}");
                std::process::exit(2);
            }
        }
    }
}

/// Creates `key` with the value of `seed`.
async fn create(store: &impl Store, key: String, seed: u64) -> Result<Ack, StorageError> {
    let revision = store.create(&key, value_for(seed)).await?;
    Ok(Ack {
        kind: Kind::Create,
        key,
        revision,
        seed,
    })
}

/// Sets shared `key` to the value of `seed`: read, compare-and-swap on the mod revision read,
/// retry on conflict (creating the key if it does not exist yet).
async fn update_shared(store: &impl Store, key: String, seed: u64) -> Result<Ack, StorageError> {
    let value = value_for(seed);
    let kv = guaranteed_update(store, &key, None, |_| Ok(value.clone())).await?;
    Ok(Ack {
        kind: Kind::Update,
        key,
        revision: kv.mod_revision,
        seed,
    })
}

// ---------------------------------------------------------------------------------------
// Parent
// ---------------------------------------------------------------------------------------

/// Everything the parent knows about the finished rounds.
#[derive(Default)]
struct History {
    /// Every acknowledged write so far, the parent's probe writes included.
    acks: Vec<Ack>,
    /// The highest revision acknowledged so far; every later write must get a higher one.
    max_revision: Revision,
    /// The highest acknowledged revision of each shared key.
    shared: HashMap<String, Revision>,
}

/// What one child run left behind.
struct CrashedRun {
    acks: Vec<Ack>,
    /// How long after the [`MIN_ACKS`]th acknowledgement the child was killed.
    kill_delay: Duration,
}

/// The parent: runs the rounds on one data directory and prints the summary line.
fn parent_main() -> ExitCode {
    let rounds = match env::var("KAPI_CRASH_ROUNDS") {
        Ok(value) => match value.parse::<u32>() {
            Ok(rounds) if rounds > 0 => rounds,
            _ => {
                eprintln!("crash: KAPI_CRASH_ROUNDS must be a positive number, got {value:?}");
                return ExitCode::FAILURE;
            }
        },
        Err(_) => DEFAULT_ROUNDS,
    };
    let dir = tempfile::tempdir().expect("temporary data directory");
    let mut history = History::default();
    for round in 1..=rounds {
        if let Err(message) = run_round(dir.path(), round, &mut history) {
            eprintln!("crash: round {round} FAILED: {message}");
            eprintln!("crash: data directory kept at {}", dir.keep().display());
            println!("crash: {} passed, 1 failed", round - 1);
            return ExitCode::FAILURE;
        }
    }
    println!("crash: {rounds} passed, 0 failed");
    ExitCode::SUCCESS
}

/// One round: crash a child, then check the store it left. Prints a summary of the round.
fn run_round(dir: &Path, round: u32, history: &mut History) -> Result<(), String> {
    let started = Instant::now();
    let run = crash_child(dir, round)?;
    let killed = started.elapsed();
    // A runtime per round: dropping it ends whatever the store left running, so the next
    // child finds the database closed.
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let (first, last) = run.acks.iter().fold((Revision::MAX, 0), |(lo, hi), ack| {
        (lo.min(ack.revision), hi.max(ack.revision))
    });
    let count = run.acks.len();
    let reopen = runtime.block_on(check_round(dir, round, run.acks, history))?;
    println!(
        "round {round}: {count} acknowledged writes at revisions {first}..={last}, \
         killed {} ms after write {MIN_ACKS} ({} ms after start), \
         reopened in {} ms, checked in {} ms more",
        run.kill_delay.as_millis(),
        killed.as_millis(),
        reopen.as_millis(),
        (started.elapsed() - killed - reopen).as_millis(),
    );
    Ok(())
}

/// Runs a child until it has acknowledged [`MIN_ACKS`] writes, waits a random delay, kills it
/// with SIGKILL and returns every acknowledgement it printed completely.
fn crash_child(dir: &Path, round: u32) -> Result<CrashedRun, String> {
    let exe = env::current_exe().map_err(|e| format!("finding the test binary: {e}"))?;
    let mut child = Command::new(exe)
        .arg(CHILD_ARG)
        .arg(dir)
        .arg(round.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the child: {e}"))?;
    let lines = spawn_line_reader(child.stdout.take().expect("piped stdout"));
    let mut received = Vec::new();
    let deadline = Instant::now() + ACK_TIMEOUT;
    while received.len() < MIN_ACKS {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => received.push(line),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the child acknowledged only {} writes in {ACK_TIMEOUT:?}",
                    received.len()
                ));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child
                    .wait()
                    .map_err(|e| format!("waiting for the child: {e}"))?;
                return Err(format!(
                    "the child exited ({status}) after only {} acknowledged writes",
                    received.len()
                ));
            }
        }
    }
    let kill_delay = Duration::from_millis(rand::random_range(0..=MAX_KILL_DELAY_MS));
    thread::sleep(kill_delay);
    child
        .kill()
        .map_err(|e| format!("killing the child: {e}"))?;
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the child: {e}"))?;
    if status.signal() != Some(9) {
        return Err(format!(
            "the child exited by itself ({status}) before the kill"
        ));
    }
    // The reader ends at the end of the pipe, now that the child is gone.
    received.extend(lines);
    let acks = received
        .iter()
        .map(|line| Ack::parse(line))
        .collect::<Result<_, _>>()?;
    Ok(CrashedRun { acks, kill_delay })
}

/// Reads the child's stdout on a thread, so the pipe never fills, and sends every complete
/// line (without its newline). A last line cut off by the kill is dropped: the child had
/// not finished reporting that write.
fn spawn_line_reader(stdout: ChildStdout) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(_) if line.ends_with('\n') => {
                    line.pop();
                    if sender.send(line).is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
    });
    receiver
}

/// Reopens the store after a crash and checks the round's acknowledged writes, a sample of
/// earlier ones, the shared keys and a new write; then records the round in `history`.
/// Returns how long reopening took (recovery included).
async fn check_round(
    dir: &Path,
    round: u32,
    acks: Vec<Ack>,
    history: &mut History,
) -> Result<Duration, String> {
    let started = Instant::now();
    let store = EmbeddedStore::open(EmbeddedConfig::new(dir))
        .map_err(|e| format!("reopening the store: {e}"))?;
    let reopen = started.elapsed();
    check_revisions(&acks, history.max_revision)?;
    let max_acked = acks.iter().map(|ack| ack.revision).max().unwrap_or(0);
    let current = store
        .current_revision()
        .await
        .map_err(|e| format!("reading the current revision: {e}"))?;
    if current < max_acked {
        return Err(format!(
            "current revision after reopening is {current}, below the acknowledged {max_acked}"
        ));
    }
    for ack in &acks {
        check_ack(&store, ack).await?;
    }
    let sample: Vec<Ack> = history
        .acks
        .choose_multiple(&mut rand::rng(), RECHECK_SAMPLE)
        .cloned()
        .collect();
    for ack in &sample {
        check_ack(&store, ack)
            .await
            .map_err(|e| format!("write of an earlier round: {e}"))?;
    }
    for ack in acks.iter().filter(|ack| ack.kind == Kind::Update) {
        let highest = history.shared.entry(ack.key.clone()).or_default();
        *highest = (*highest).max(ack.revision);
    }
    check_shared_latest(&store, &history.shared).await?;
    let probe = probe_write(&store, round, current).await?;
    history.max_revision = probe.revision;
    history.acks.extend(acks);
    history.acks.push(probe);
    Ok(reopen)
}

/// Checks that the round's revisions are distinct and above every revision acknowledged
/// before: a revision is never handed out twice, not even across a crash.
fn check_revisions(acks: &[Ack], earlier_max: Revision) -> Result<(), String> {
    let mut seen: HashMap<Revision, &str> = HashMap::new();
    for ack in acks {
        if ack.revision <= earlier_max {
            return Err(format!(
                "{ack}: not above revision {earlier_max}, the highest acknowledged before this round"
            ));
        }
        if let Some(other) = seen.insert(ack.revision, &ack.key) {
            return Err(format!(
                "revision {} acknowledged twice: for {other} and for {}",
                ack.revision, ack.key
            ));
        }
    }
    Ok(())
}

/// Checks that an acknowledged write reads back with its value at its revision, and for a
/// created key (never written again) also as the latest value.
async fn check_ack(store: &EmbeddedStore, ack: &Ack) -> Result<(), String> {
    let expected = value_for(ack.seed);
    let at = store
        .get(&ack.key, Some(ack.revision))
        .await
        .map_err(|e| format!("{ack}: reading it at its revision failed: {e}"))?;
    check_kv(ack, "read at its revision", at.kv.as_ref(), &expected)?;
    if ack.kind == Kind::Create {
        let latest = store
            .get(&ack.key, None)
            .await
            .map_err(|e| format!("{ack}: reading its latest value failed: {e}"))?;
        check_kv(ack, "latest read", latest.kv.as_ref(), &expected)?;
    }
    Ok(())
}

/// Compares one read of an acknowledged write with what was written; `what` names the read.
fn check_kv(ack: &Ack, what: &str, kv: Option<&KeyValue>, expected: &Bytes) -> Result<(), String> {
    let Some(kv) = kv else {
        return Err(format!("{ack}: the {what} finds no such key"));
    };
    if kv.mod_revision != ack.revision {
        return Err(format!(
            "{ack}: the {what} has mod revision {}, expected {}",
            kv.mod_revision, ack.revision
        ));
    }
    if ack.kind == Kind::Create && kv.create_revision != ack.revision {
        return Err(format!(
            "{ack}: the {what} has create revision {}, expected {}",
            kv.create_revision, ack.revision
        ));
    }
    if kv.value != *expected {
        let differs_at = kv
            .value
            .iter()
            .zip(expected.iter())
            .position(|(a, b)| a != b)
            .unwrap_or(kv.value.len().min(expected.len()));
        return Err(format!(
            "{ack}: the {what} has a {}-byte value, expected the {}-byte value of seed {} \
             (first difference at byte {differs_at})",
            kv.value.len(),
            expected.len(),
            ack.seed
        ));
    }
    Ok(())
}

/// Checks that no shared key's latest revision is below its highest acknowledged one (it may
/// be above: a write can land without its acknowledgement being printed before the kill).
async fn check_shared_latest(
    store: &EmbeddedStore,
    shared: &HashMap<String, Revision>,
) -> Result<(), String> {
    for (key, &acked) in shared {
        let latest = store
            .get(key, None)
            .await
            .map_err(|e| format!("reading shared key {key}: {e}"))?;
        let latest = latest.kv.map_or(0, |kv| kv.mod_revision);
        if latest < acked {
            return Err(format!(
                "shared key {key} has mod revision {latest}, below its acknowledged revision {acked}"
            ));
        }
    }
    Ok(())
}

/// Writes a new key after reopening: it must get a revision above `current`, which is at
/// least every acknowledged revision. Returns it as an acknowledgement to check later.
async fn probe_write(store: &EmbeddedStore, round: u32, current: Revision) -> Result<Ack, String> {
    let key = format!("/registry/crash/probe/r{round}");
    let ack = create(store, key.clone(), rand::random())
        .await
        .map_err(|e| format!("creating {key} after reopening: {e}"))?;
    if ack.revision <= current {
        return Err(format!(
            "{ack}: a new write after reopening must get a revision above the current {current}"
        ));
    }
    Ok(ack)
}
