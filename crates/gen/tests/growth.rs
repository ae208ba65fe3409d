//! Growing pools: the distinct actors and repositories of generated hours
//! grow with the hours exactly as the profile's Heaps laws say, where fixed
//! pools stop at their size; and the first hour still looks like the real one.

use std::collections::HashSet;

use ghbench_core::{Hour, HourRange};
use ghbench_gen::growth::Pools;
use ghbench_gen::{Generator, Profile};
use serde_json::Value;

const EVENTS_PER_HOUR: u64 = 300;

/// Distinct actors and repositories of others after each of `hours`, in order.
fn distinct_by_hour(gen: &Generator, hours: HourRange) -> Vec<(u64, usize, usize)> {
    let (mut actors, mut others) = (HashSet::new(), HashSet::new());
    let mut events = 0;
    hours
        .iter()
        .map(|hour| {
            for line in gen.events(hour, EVENTS_PER_HOUR) {
                let e: Value = serde_json::from_str(&line).unwrap();
                let login = e["actor"]["login"].as_str().unwrap().to_string();
                let repo = e["repo"]["name"].as_str().unwrap().to_string();
                if repo.split('/').next() != Some(login.as_str()) {
                    others.insert(repo);
                }
                actors.insert(login);
                events += 1;
            }
            (events, actors.len(), others.len())
        })
        .collect()
}

#[test]
fn distinct_actors_and_repositories_grow_with_the_hours_as_the_model_says() {
    let profile = Profile::default_profile();
    let growth = profile
        .growth
        .clone()
        .expect("the built-in profile is calibrated with growth");
    let first: Hour = profile.ids.origin_hour.parse().unwrap();
    let gen = Generator::new(profile.clone(), 42).unwrap();
    let counted = distinct_by_hour(&gen, HourRange::starting_at(first, 24).unwrap());
    // Three sizes spanning 4x: 6, 12 and 24 hours.
    for &(events, actors, others) in [&counted[5], &counted[11], &counted[23]] {
        assert_eq!(
            actors as u64,
            growth.actors.distinct_after(events),
            "actors after {events} events"
        );
        // A made-up owner may by chance be named like an actor: a few in a thousand at most.
        let expected = growth.repos.distinct_after(events) as f64;
        assert!(
            (others as f64 / expected - 1.0).abs() < 0.003,
            "repositories of others after {events} events: {others}, the model {expected}"
        );
    }
    let (small, large) = (counted[5], counted[23]);
    let ratio = large.1 as f64 / small.1 as f64;
    // 4x the events, 4^beta the actors (beta about 0.82).
    assert!(
        (ratio / 4f64.powf(growth.actors.beta) - 1.0).abs() < 0.02,
        "actors grew {ratio:.2}x over 4x the events"
    );

    // Fixed pools draw on the same people every hour: they fill up, and grow less over the same 4x.
    let fixed =
        Generator::new(Pools::Fixed.apply(profile.clone(), "built-in").unwrap(), 42).unwrap();
    let fixed_counted = distinct_by_hour(&fixed, HourRange::starting_at(first, 24).unwrap());
    let fixed_ratio = fixed_counted[23].1 as f64 / fixed_counted[5].1 as f64;
    assert!(
        fixed_counted[23].1 as u64 <= profile.actors.pool && fixed_ratio < ratio,
        "fixed pools grew {fixed_ratio:.2}x, growing {ratio:.2}x"
    );
}

#[test]
fn an_hour_is_the_same_whichever_hours_are_made_before_it() {
    let profile = Profile::default_profile();
    let hour: Hour = "2015-01-03T07".parse().unwrap();
    let (a, b) = (
        Generator::new(profile.clone(), 9).unwrap(),
        Generator::new(profile, 9).unwrap(),
    );
    let _ = a.events("2015-01-01T00".parse().unwrap(), EVENTS_PER_HOUR);
    assert_eq!(
        a.events(hour, EVENTS_PER_HOUR),
        b.events(hour, EVENTS_PER_HOUR)
    );
}

#[test]
fn growing_pools_are_refused_for_a_profile_without_growth_saying_what_to_do() {
    let mut profile = Profile::default_profile();
    profile.growth = None;
    let error = Pools::Growing.apply(profile, "old.json").unwrap_err();
    assert!(
        error.contains("old.json") && error.contains("--pools fixed"),
        "{error}"
    );
}
