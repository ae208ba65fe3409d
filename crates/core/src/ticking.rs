//! Long work that says it still runs: a step over a whole table or an index
//! build takes minutes to hours on a year of data, and a log that shows
//! nothing for that long reads as a hang.

use std::future::Future;
use std::time::Duration;

/// `work` to its end, with `tick` called every `every` while it runs, given
/// how long it has run so far (whole seconds). The work is polled during a
/// tick too, so its end is seen when it comes (a build's recorded time does
/// not grow by a slow tick); a tick still running then is dropped.
pub async fn ticking<T, Tick: Future<Output = ()>>(work: impl Future<Output = T>, every: Duration, mut tick: impl FnMut(Duration) -> Tick) -> T {
    let mut work = std::pin::pin!(work);
    let started = tokio::time::Instant::now();
    let mut next = started + every;
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tokio::time::sleep_until(next) => {}
        }
        let ticked = tick(Duration::from_secs(started.elapsed().as_secs()));
        tokio::select! {
            done = &mut work => return done,
            _ = ticked => {}
        }
        next += every;
    }
}

/// `what: 2m 15s so far; <what the server says>` for a progress line.
pub fn so_far(what: &str, elapsed: Duration, progress: Option<&str>) -> String {
    let so_far = crate::limit::said(elapsed);
    match progress {
        Some(said) => format!("{what}: {so_far} so far; {said}"),
        None => format!("{what}: {so_far} so far"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[tokio::test(start_paused = true)]
    async fn long_work_ticks_with_its_time_so_far_and_quick_work_not_at_all() {
        let ticks = AtomicU64::new(0);
        let done = ticking(tokio::time::sleep(Duration::from_secs(35)), Duration::from_secs(15), |elapsed| {
            ticks.fetch_add(elapsed.as_secs(), Ordering::SeqCst);
            async {}
        })
        .await;
        assert_eq!(done, ());
        assert_eq!(ticks.load(Ordering::SeqCst), 15 + 30, "a tick at 15 s and at 30 s");
        let none = ticking(async { 7 }, Duration::from_secs(15), |_| async { panic!("no tick for quick work") }).await;
        assert_eq!(none, 7);
        // Work that ends during a slow tick is seen to end then, not after the tick.
        let started = tokio::time::Instant::now();
        ticking(tokio::time::sleep(Duration::from_secs(16)), Duration::from_secs(15), |_| tokio::time::sleep(Duration::from_secs(60))).await;
        assert_eq!(started.elapsed().as_secs(), 16);
        assert_eq!(so_far("VACUUM t", Duration::from_secs(135), Some("scanning heap")), "VACUUM t: 2m 15s so far; scanning heap");
    }
}
