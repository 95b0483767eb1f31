//! Consistent hashing by user over a ring of pods.
//!
//! Each pod owns `virtual_nodes` points on a ring of 64-bit hashes; a user goes to the first
//! member's point at or after the hash of its ID. A pod that leaves hands the users of each
//! of its arcs to the next member along the ring, and only those: the other users keep their
//! pod (the property that makes a dead pod behind a hash balancer fail the same ~1/n of users
//! on every retry). Membership follows the Service's ready endpoints, or is static when no
//! health signal reaches the balancer.
//!
//! The ring is kept incrementally: a membership change costs its pod's points, not the ring.

use super::Router;
use crate::engine::traffic::Split;
use crate::scenario::Membership;
use crate::time::Millis;
use std::collections::BTreeSet;

/// A consistent-hash balancer in front of the pods.
#[derive(Debug)]
pub(crate) struct ConsistentHash {
    membership: Membership,
    propagation: Millis,
    ready: Vec<bool>,
    ring: Ring,
}

impl ConsistentHash {
    /// A ring of `virtual_nodes` points per pod for `users` users, no pod on it yet.
    pub(crate) fn new(
        pods: usize,
        virtual_nodes: u32,
        membership: Membership,
        propagation: Millis,
        users: u32,
        seed: u64,
    ) -> Self {
        ConsistentHash {
            membership,
            propagation,
            ready: vec![false; pods],
            ring: Ring::new(pods, virtual_nodes, users, seed),
        }
    }
}

impl Router for ConsistentHash {
    fn name(&self) -> &'static str {
        "consistent-hash"
    }

    fn healthy(&self, pod: usize) -> bool {
        match self.membership {
            Membership::Endpoints => self.ready[pod],
            Membership::Static => true,
        }
    }

    fn split(&self, members: usize, _pods: usize) -> Split {
        if members == 0 {
            Split::Refused
        } else {
            Split::Members
        }
    }

    fn weight(&self, pod: usize) -> f64 {
        f64::from(self.ring.users_of(pod))
    }

    fn membership_changed(&mut self, pod: usize, member: bool, reweighted: &mut Vec<usize>) {
        self.ring.set_member(pod, member, reweighted);
    }

    fn propagation(&self) -> Option<Millis> {
        match self.membership {
            Membership::Endpoints => Some(self.propagation),
            Membership::Static => None,
        }
    }

    fn endpoint_update(&mut self, pod: usize, ready: bool) -> bool {
        if self.membership == Membership::Static {
            return false;
        }
        let changed = self.ready[pod] != ready;
        self.ready[pod] = ready;
        changed
    }
}

/// splitmix64: the ring's hash.
pub(crate) fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// The ring: every pod's points in hash order, the members' points, and the users each
/// member owns.
#[derive(Debug)]
pub(crate) struct Ring {
    /// (hash, pod), sorted.
    points: Vec<(u64, u32)>,
    /// Each pod's point indices, ascending.
    pod_points: Vec<Vec<u32>>,
    /// Indices of the members' points.
    members: BTreeSet<u32>,
    /// Users' hashes, sorted.
    users: Vec<u64>,
    owned: Vec<u32>,
}

impl Ring {
    /// A ring with every pod's points and no member.
    pub(crate) fn new(pods: usize, virtual_nodes: u32, users: u32, seed: u64) -> Self {
        let mut points = Vec::with_capacity(pods * virtual_nodes as usize);
        for pod in 0..pods {
            for node in 0..virtual_nodes {
                let hash = mix(seed ^ mix(((pod as u64) << 32) | u64::from(node)));
                points.push((hash, pod as u32));
            }
        }
        points.sort_unstable();
        let mut pod_points = vec![Vec::with_capacity(virtual_nodes as usize); pods];
        for (index, (_, pod)) in points.iter().enumerate() {
            pod_points[*pod as usize].push(index as u32);
        }
        let mut user_hashes: Vec<u64> = (0..users)
            .map(|user| mix(seed.rotate_left(17) ^ mix(0xA5A5_0000_0000_0000 | u64::from(user))))
            .collect();
        user_hashes.sort_unstable();
        Ring {
            points,
            pod_points,
            members: BTreeSet::new(),
            users: user_hashes,
            owned: vec![0; pods],
        }
    }

    /// Users the pod owns.
    pub(crate) fn users_of(&self, pod: usize) -> u32 {
        self.owned[pod]
    }

    /// Users whose hash lies in the arc after point `from` up to and including point `to`
    /// (the whole ring when they are the same point).
    fn users_between(&self, from: u32, to: u32) -> u32 {
        let at_most = |hash: u64| self.users.partition_point(|user| *user <= hash);
        let (from_hash, to_hash) = (self.points[from as usize].0, self.points[to as usize].0);
        let count = if from < to {
            at_most(to_hash).saturating_sub(at_most(from_hash))
        } else {
            self.users.len() - at_most(from_hash) + at_most(to_hash)
        };
        count as u32
    }

    /// The member point before `point` along the ring (cyclic), in `set`.
    fn before(set: &BTreeSet<u32>, point: u32) -> Option<u32> {
        set.range(..point)
            .next_back()
            .or_else(|| set.range(point..).next_back())
            .copied()
    }

    /// The member point after `point` along the ring (cyclic), in `set`.
    fn after(set: &BTreeSet<u32>, point: u32) -> Option<u32> {
        set.range(point + 1..)
            .next()
            .or_else(|| set.range(..=point).next())
            .copied()
    }

    /// Of two points, the one closer before `point` going back along the ring (`point`
    /// itself counts as a full turn away).
    fn closer_before(&self, point: u32, first: u32, second: u32) -> u32 {
        let len = self.points.len() as u64;
        let back = |other: u32| {
            let distance = (u64::from(point) + len - u64::from(other)) % len;
            if distance == 0 { len } else { distance }
        };
        if back(first) <= back(second) {
            first
        } else {
            second
        }
    }

    /// Adds or removes a pod's points; pods whose users changed are added to `changed`.
    pub(crate) fn set_member(&mut self, pod: usize, member: bool, changed: &mut Vec<usize>) {
        let points = std::mem::take(&mut self.pod_points[pod]);
        let Some(&first) = points.first() else {
            self.pod_points[pod] = points;
            return;
        };
        if self.members.contains(&first) == member {
            self.pod_points[pod] = points;
            return;
        }
        if !member {
            for point in &points {
                self.members.remove(point);
            }
        }
        // `self.members` now holds the other members' points. Each of the pod's points owns
        // the arc from the member point before it (the pod's own points included) to itself;
        // without the pod, that arc belongs to the next other member along.
        for (index, &point) in points.iter().enumerate() {
            let own_previous = points[(index + points.len() - 1) % points.len()];
            let from = match Self::before(&self.members, point) {
                Some(other) => self.closer_before(point, other, own_previous),
                None => own_previous,
            };
            let users = self.users_between(from, point);
            if users == 0 {
                continue;
            }
            let Some(next) = Self::after(&self.members, point) else {
                // The pod is (or was) the only member: it alone owns every user.
                if member {
                    self.owned[pod] += users;
                } else {
                    self.owned[pod] -= users;
                }
                continue;
            };
            let neighbour = self.points[next as usize].1 as usize;
            if member {
                self.owned[neighbour] -= users;
                self.owned[pod] += users;
            } else {
                self.owned[pod] -= users;
                self.owned[neighbour] += users;
            }
            changed.push(neighbour);
        }
        changed.sort_unstable();
        changed.dedup();
        if member {
            self.members.extend(points.iter().copied());
        }
        self.pod_points[pod] = points;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each user's owner, from scratch.
    fn brute_force(ring: &Ring, members: &[bool]) -> Vec<u32> {
        let live: Vec<&(u64, u32)> = ring
            .points
            .iter()
            .filter(|(_, pod)| members[*pod as usize])
            .collect();
        let mut owned = vec![0; members.len()];
        if live.is_empty() {
            return owned;
        }
        for user in &ring.users {
            let at = live.partition_point(|(hash, _)| hash < user);
            owned[live[at % live.len()].1 as usize] += 1;
        }
        owned
    }

    #[test]
    fn incremental_ring_matches_a_full_recount() {
        let pods = 12;
        let mut ring = Ring::new(pods, 20, 5_000, 7);
        let mut members = vec![false; pods];
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..300 {
            let pod = rng.usize(0..pods);
            let member = rng.bool();
            let mut changed = Vec::new();
            ring.set_member(pod, member, &mut changed);
            members[pod] = member;
            assert_eq!(ring.owned, brute_force(&ring, &members), "{members:?}");
            if members.iter().any(|member| *member) {
                assert_eq!(ring.owned.iter().sum::<u32>(), 5_000);
            }
        }
    }

    #[test]
    fn a_leaving_pod_hands_its_users_to_neighbours_only() {
        let mut ring = Ring::new(40, 100, 10_000, 1);
        for pod in 0..40 {
            ring.set_member(pod, true, &mut Vec::new());
        }
        let before = ring.owned.clone();
        let mut changed = Vec::new();
        ring.set_member(3, false, &mut changed);
        assert_eq!(ring.owned[3], 0);
        for (pod, owned) in before.iter().enumerate() {
            if pod != 3 && !changed.contains(&pod) {
                assert_eq!(ring.owned[pod], *owned);
            }
        }
        // About one pod in forty owns about 2.5% of the users.
        assert!((150..=350).contains(&before[3]), "{}", before[3]);
    }
}
