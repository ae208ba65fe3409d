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
    use std::thread::JoinHandle;
    use std::time::Duration;

    /// A gate of the test's own: the tests of this module run at once.
    fn gate() -> &'static Gate {
        Box::leak(Box::new(Gate::new()))
    }

    /// A test on a thread of its own that takes a guard of a group and holds
    /// it until released.
    struct Held {
        entered: Arc<AtomicBool>,
        release: mpsc::Sender<()>,
        thread: JoinHandle<()>,
    }

    impl Held {
        fn start(gate: &'static Gate, group: Group) -> Held {
            let entered = Arc::new(AtomicBool::new(false));
            let (release, released) = mpsc::channel::<()>();
            let flag = entered.clone();
            let thread = std::thread::spawn(move || {
                let _guard = gate.enter(group);
                flag.store(true, Ordering::SeqCst);
                let _ = released.recv();
            });
            Held { entered, release, thread }
        }

        /// It holds its guard within two seconds.
        fn runs(&self) -> bool {
            (0..200).any(|_| {
                std::thread::sleep(Duration::from_millis(10));
                self.entered.load(Ordering::SeqCst)
            })
        }

        /// It still waits a moment later.
        fn waits(&self) -> bool {
            std::thread::sleep(Duration::from_millis(200));
            !self.entered.load(Ordering::SeqCst)
        }

        fn end(self) {
            self.release.send(()).unwrap();
            self.thread.join().unwrap();
        }
    }

    #[test]
    fn tests_of_one_group_run_together_and_never_beside_another_group() {
        let gate = gate();
        let (first, second) = (Held::start(gate, Group::Shared), Held::start(gate, Group::Shared));
        assert!(first.runs() && second.runs(), "two shared tests at once");
        let disturbing = Held::start(gate, Group::Disturbing);
        assert!(disturbing.waits(), "a disturbing test waits for the shared ones");
        first.end();
        assert!(disturbing.waits(), "one shared test still runs");
        second.end();
        assert!(disturbing.runs());
        disturbing.end();
    }

    #[test]
    fn a_waiting_group_goes_before_tests_that_asked_after_it() {
        let gate = gate();
        let shared = Held::start(gate, Group::Shared);
        assert!(shared.runs());
        let disturbing = Held::start(gate, Group::Disturbing);
        assert!(disturbing.waits());
        // It would fit beside the shared test running, but the disturbing one asked first.
        let later = Held::start(gate, Group::Shared);
        assert!(later.waits(), "no group waits for ever");
        shared.end();
        assert!(disturbing.runs() && later.waits());
        disturbing.end();
        assert!(later.runs());
        later.end();
    }

    /// `body` panics on a thread of its own (a failing test): whatever guard
    /// it held is released, so a test alone comes in next.
    fn panics_and_lets_go(gate: &'static Gate, body: impl FnOnce(&'static Gate) + Send + 'static) {
        assert!(std::thread::spawn(move || body(gate)).join().is_err());
        let next = Held::start(gate, Group::Alone);
        assert!(next.runs(), "the guard was released by the panic");
        next.end();
    }

    #[test]
    fn a_test_alone_runs_beside_none_and_a_panic_lets_the_next_in() {
        let gate = gate();
        panics_and_lets_go(gate, |gate| {
            let _guard = gate.enter(Group::Alone);
            panic!("the test failed");
        });
        let (first, second) = (Held::start(gate, Group::Alone), Held::start(gate, Group::Alone));
        assert!(first.runs() != second.runs(), "two tests alone are never together");
        let (first, second) = if first.entered.load(Ordering::SeqCst) { (first, second) } else { (second, first) };
        first.end();
        assert!(second.runs());
        second.end();
    }

    #[test]
    fn a_second_guard_in_one_test_panics_rather_than_waits_on_itself() {
        panics_and_lets_go(gate(), |gate| {
            let _first = gate.enter(Group::Shared);
            let _second = gate.enter(Group::Shared);
        });
    }
}
