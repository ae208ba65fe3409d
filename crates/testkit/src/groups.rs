//! Serialised groups: which tests of the one integration binary may run at
//! the same time as which.
//!
//! In one test binary the tests of every area run at once (`cargo test`
//! runs one test per core), where 22 binaries used to keep them apart. A
//! test that drops the OS page cache would make another test's "second run,
//! from the page cache" read from disk; one that restarts a server `just
//! setup` started would cut every other test's connections. So each test
//! that touches those servers, or disturbs what their tests read, takes a
//! guard on its first line and holds it to its end:
//!
//! | guard | for a test that | runs beside |
//! |---|---|---|
//! | [`shared_servers`] | uses the servers `just setup` started | other `shared_servers` tests |
//! | [`disturbs_servers`] | drops the OS page cache (a cold run as root, `--memory`), on servers of its own or on the shared ones | other `disturbs_servers` tests: none disturbs what another reads |
//! | [`alone_with_servers`] | restarts, stops or freezes a shared server, or measures the shared servers in a way any other test's work would change (the kernel's read counters) | no test holding a guard |
//!
//! A test on servers of its own (throwaway clusters, its own `setup.sh`)
//! or on none needs no guard, unless it drops the page cache. Only the
//! integration binary needs guards: cargo runs test binaries one after
//! another, so a crate's own tests never meet those of another binary.
//!
//! Why not the `serial_test` crate: its `#[serial]` and `#[parallel]` are
//! two of these groups (alone, and together); it has no group whose tests
//! run beside each other but never beside the tests of another group, which
//! is what the page-cache tests are (they ran side by side as one binary
//! for months). Waiting tests go in the order they asked, so no group waits
//! for ever; a guard is a value, released when the test ends, also by a
//! panic (a panicking test poisons nothing here).
//!
//! Deadlock: a test takes one guard, never two (a second on the same thread
//! panics instead of waiting on itself), and a waiting test holds nothing.
//! The guard cannot leave the test's thread (it is not `Send`): an async
//! test holds it in its body, which `#[tokio::test]` (either flavor) polls
//! on the test's own thread.

use std::cell::Cell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// For a test that uses the servers `just setup` started: it runs beside
/// other such tests, never beside one that disturbs them.
#[must_use = "bind the guard to a name (`let _servers = …`): `let _ =` drops it at once"]
pub fn shared_servers() -> ServersGuard {
    GATE.enter(Group::Shared)
}

/// For a test that drops the OS page cache (as `--cold` and `--memory` do
/// as root): it never runs beside a [`shared_servers`] test, whose timings
/// and read counts it would change, but beside other such tests.
#[must_use = "bind the guard to a name (`let _servers = …`): `let _ =` drops it at once"]
pub fn disturbs_servers() -> ServersGuard {
    GATE.enter(Group::Disturbing)
}

/// For a test that restarts, stops or freezes a server `just setup`
/// started, or whose measure of those servers any other test's work would
/// change: it runs beside no test that holds a guard.
#[must_use = "bind the guard to a name (`let _servers = …`): `let _ =` drops it at once"]
pub fn alone_with_servers() -> ServersGuard {
    GATE.enter(Group::Alone)
}

/// Held for the whole test; dropping it lets the tests of another group in.
#[must_use = "dropping the guard ends the test's group at once"]
pub struct ServersGuard {
    gate: &'static Gate,
    /// Not `Send`: released on the thread that took it.
    _here: PhantomData<*const ()>,
}

impl std::fmt::Debug for ServersGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServersGuard")
    }
}

impl Drop for ServersGuard {
    fn drop(&mut self) {
        HOLDS_A_GUARD.set(false);
        let mut state = self.gate.state();
        state.running = match state.running {
            Some((group, n)) if n > 1 => Some((group, n - 1)),
            _ => None,
        };
        self.gate.opened.notify_all();
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Group {
    Shared,
    Disturbing,
    Alone,
}

impl Group {
    /// Whether a test of this group may run while one of `other` runs.
    fn beside(self, other: Group) -> bool {
        self == other && self != Group::Alone
    }
}

thread_local! {
    /// This thread (one test) holds a guard: a second would wait on itself.
    static HOLDS_A_GUARD: Cell<bool> = const { Cell::new(false) };
}

static GATE: Gate = Gate::new();

/// The groups' one lock: who runs, who waits and in what order.
struct Gate {
    state: Mutex<State>,
    opened: Condvar,
}

struct State {
    /// The group running now and how many of its tests: tests run together
    /// only when they are of one group.
    running: Option<(Group, usize)>,
    /// Tests waiting, by the order they asked in (ticket, group).
    waiting: VecDeque<(u64, Group)>,
    next_ticket: u64,
}

impl Gate {
    const fn new() -> Gate {
        Gate { state: Mutex::new(State { running: None, waiting: VecDeque::new(), next_ticket: 0 }), opened: Condvar::new() }
    }

    /// The state; a test that panicked while holding the lock left it whole
    /// (every change under it is one assignment).
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn enter(&'static self, group: Group) -> ServersGuard {
        assert!(!HOLDS_A_GUARD.get(), "this test already holds a servers guard: take one, on its first line, and hold it to the end");
        let mut state = self.state();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push_back((ticket, group));
        while !state.may_enter(ticket, group) {
            state = self.opened.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.waiting.retain(|(t, _)| *t != ticket);
        state.running = Some((group, state.running.map_or(0, |(_, n)| n) + 1));
        // Later tests of the same group may come in beside this one.
        self.opened.notify_all();
        HOLDS_A_GUARD.set(true);
        ServersGuard { gate: self, _here: PhantomData }
    }
}

impl State {
    /// The test `ticket` of `group` fits beside the tests running, and no
    /// test that asked before it is of a group it cannot run beside (that
    /// one goes first: no group waits for ever).
    fn may_enter(&self, ticket: u64, group: Group) -> bool {
        let fits = self.running.is_none_or(|(running, _)| group.beside(running));
        let first = self.waiting.iter().take_while(|(t, _)| *t != ticket).all(|(_, earlier)| group.beside(*earlier));
        fits && first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// A gate of the test's own: the tests of this module run at once.
    fn gate() -> &'static Gate {
        Box::leak(Box::new(Gate::new()))
    }

    /// Takes a guard of `group` on a thread of its own and holds it until
    /// told to let go; `entered` is set once it holds it.
    fn hold(gate: &'static Gate, group: Group) -> (Arc<AtomicBool>, mpsc::Sender<()>, std::thread::JoinHandle<()>) {
        let entered = Arc::new(AtomicBool::new(false));
        let (release, released) = mpsc::channel::<()>();
        let flag = entered.clone();
        let thread = std::thread::spawn(move || {
            let _guard = gate.enter(group);
            flag.store(true, Ordering::SeqCst);
            let _ = released.recv();
        });
        (entered, release, thread)
    }

    fn soon(flag: &AtomicBool) -> bool {
        for _ in 0..200 {
            if flag.load(Ordering::SeqCst) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    fn not_yet(flag: &AtomicBool) -> bool {
        std::thread::sleep(Duration::from_millis(200));
        !flag.load(Ordering::SeqCst)
    }

    #[test]
    fn tests_of_one_group_run_together_and_never_beside_another_group() {
        let gate = gate();
        let (first, release_first, first_thread) = hold(gate, Group::Shared);
        let (second, release_second, second_thread) = hold(gate, Group::Shared);
        assert!(soon(&first) && soon(&second), "two shared tests at once");
        let (disturbing, release_disturbing, disturbing_thread) = hold(gate, Group::Disturbing);
        assert!(not_yet(&disturbing), "a disturbing test waits for the shared ones");
        release_first.send(()).unwrap();
        first_thread.join().unwrap();
        assert!(not_yet(&disturbing), "one shared test still runs");
        release_second.send(()).unwrap();
        second_thread.join().unwrap();
        assert!(soon(&disturbing));
        release_disturbing.send(()).unwrap();
        disturbing_thread.join().unwrap();
    }

    #[test]
    fn a_waiting_group_goes_before_tests_that_asked_after_it() {
        let gate = gate();
        let (shared, release_shared, shared_thread) = hold(gate, Group::Shared);
        assert!(soon(&shared));
        let (disturbing, release_disturbing, disturbing_thread) = hold(gate, Group::Disturbing);
        assert!(not_yet(&disturbing));
        // Would fit beside the running shared test, but the disturbing one asked first.
        let (later, release_later, later_thread) = hold(gate, Group::Shared);
        assert!(not_yet(&later), "no group waits for ever");
        release_shared.send(()).unwrap();
        shared_thread.join().unwrap();
        assert!(soon(&disturbing) && not_yet(&later));
        release_disturbing.send(()).unwrap();
        disturbing_thread.join().unwrap();
        assert!(soon(&later));
        release_later.send(()).unwrap();
        later_thread.join().unwrap();
    }

    #[test]
    fn a_test_alone_runs_beside_none_and_a_panic_lets_the_next_in() {
        let gate = gate();
        let alone = std::thread::spawn(move || {
            let _guard = gate.enter(Group::Alone);
            panic!("the test failed");
        });
        assert!(alone.join().is_err());
        let (first, release_first, first_thread) = hold(gate, Group::Alone);
        assert!(soon(&first), "the panicking test's guard was released");
        let (second, release_second, second_thread) = hold(gate, Group::Alone);
        assert!(not_yet(&second), "two tests alone are never together");
        release_first.send(()).unwrap();
        first_thread.join().unwrap();
        assert!(soon(&second));
        release_second.send(()).unwrap();
        second_thread.join().unwrap();
    }

    #[test]
    fn a_second_guard_in_one_test_panics_rather_than_waits_on_itself() {
        let gate = gate();
        let nested = std::thread::spawn(move || {
            let _first = gate.enter(Group::Shared);
            let _second = gate.enter(Group::Shared);
        });
        assert!(nested.join().is_err());
        let (next, release, thread) = hold(gate, Group::Alone);
        assert!(soon(&next), "the first guard was released by the panic");
        release.send(()).unwrap();
        thread.join().unwrap();
    }
}
