//! A mutable duplicate-free placement with incremental GPU loads over one or more load windows,
//! and the two moves every improvement in this module is built from.

use crate::model::PlacementCluster;

/// Shifts up to which a replacement's effect looks each GPU up linearly among those already
/// touched (fastest for the usual one or two replicas per expert).
const LINEAR_LOOKUP_MAX: usize = 32;

/// Room each expert's slot list gets beyond its replicas when the lists are laid out: a
/// replacement that gives an expert more replicas than its room moves its list to the end of
/// the shared buffer.
const LIST_SLACK: usize = 2;

/// A change of a placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Move {
    /// Exchange the experts of two slots on different GPUs (replica counts unchanged).
    Swap(usize, usize),
    /// Put expert `.1` in slot `.0` instead of its expert, which must keep another replica.
    Replace(usize, usize),
}

/// A placement being improved: which expert sits in each slot, and each GPU's load under each
/// window's loads (`load[k * G + g]`).
#[derive(Debug, Clone)]
pub(crate) struct SlotState<'a> {
    pub(crate) cluster: &'a PlacementCluster,
    pub(crate) experts: usize,
    pub(crate) windows: usize,
    /// `w[k * E + e]`: load of expert `e` in window `k`.
    w: Vec<f64>,
    inv_speed: Vec<f64>,
    pub(crate) gpu_of_slot: Vec<usize>,
    pub(crate) expert_of_slot: Vec<usize>,
    pub(crate) count: Vec<usize>,
    /// Every expert's slots in one buffer (one allocation instead of one per expert, which
    /// was most of the cost of a new state): expert `e`'s are `slot_list[start..end]` with
    /// `(start, end) = list[e]`, in the order they were added (the order every sum over an
    /// expert's replicas follows), with room up to `start + list_room[e]`.
    slot_list: Vec<usize>,
    list: Vec<(usize, usize)>,
    list_room: Vec<usize>,
    member: Vec<u64>,
    words: usize,
    /// Bit `j` (of word `j / 64`) set when slot `j`'s expert has another replica: the slots
    /// the searches may replace, kept up to date by [`SlotState::apply`] (the searches listed
    /// them from every slot at every step).
    spare: Vec<u64>,
    pub(crate) load: Vec<f64>,
    /// Each GPU's slots by their replica's share of window 0 (as [`SlotState::share`] gives
    /// it), lightest first, in the GPU's slot range, with the sort key: kept up to date by
    /// [`SlotState::apply`], so a search need not sort them at every step.
    by_share: Vec<(u64, usize)>,
    /// Per expert, window 0: the share of one replica with its replica count as it is, with one
    /// more, and with one fewer (exactly [`SlotState::share`]'s values, kept up to date by
    /// [`SlotState::apply`]: the searches read them for every slot and expert at every step,
    /// and a division is slow).
    pub(crate) share_now: Vec<f64>,
    pub(crate) share_more: Vec<f64>,
    pub(crate) share_less: Vec<f64>,
}

impl<'a> SlotState<'a> {
    /// A state from a valid, duplicate-free map and the loads of each window (`E` each).
    pub(crate) fn new(cluster: &'a PlacementCluster, windows: &[&[f64]], map: Vec<usize>) -> Self {
        let experts = windows[0].len();
        let words = experts.div_ceil(64);
        let gpu_of_slot = cluster.gpu_of_each_slot();
        let mut s = Self {
            cluster,
            experts,
            windows: windows.len(),
            w: windows.concat(),
            inv_speed: cluster.speed_of_gpu().iter().map(|v| 1.0 / v).collect(),
            member: vec![0; cluster.gpus() * words],
            words,
            spare: vec![0; map.len().div_ceil(64)],
            count: vec![0; experts],
            slot_list: Vec::new(),
            list: vec![(0, 0); experts],
            list_room: vec![0; experts],
            load: vec![0.0; windows.len() * cluster.gpus()],
            by_share: map.iter().enumerate().map(|(slot, _)| (0, slot)).collect(),
            gpu_of_slot,
            expert_of_slot: map,
            share_now: vec![0.0; experts],
            share_more: vec![0.0; experts],
            share_less: vec![0.0; experts],
        };
        for (slot, &e) in s.expert_of_slot.iter().enumerate() {
            s.count[e] += 1;
            let g = s.gpu_of_slot[slot];
            s.member[g * words + e / 64] |= 1 << (e % 64);
        }
        s.lay_out_lists();
        for slot in 0..s.expert_of_slot.len() {
            s.mark_spare(slot);
        }
        for e in 0..experts {
            s.update_shares(e);
        }
        for g in 0..cluster.gpus() {
            s.refresh(g);
        }
        s
    }

    /// The slots of expert `e`, in the order they were added (a swap keeps a slot's place).
    #[inline]
    pub(crate) fn slots_of(&self, e: usize) -> &[usize] {
        let (start, end) = self.list[e];
        &self.slot_list[start..end]
    }

    /// Lays every expert's slot list out afresh from the slots' experts, in slot order, with
    /// [`LIST_SLACK`] room each.
    fn lay_out_lists(&mut self) {
        let mut next = 0;
        for e in 0..self.experts {
            self.list[e] = (next, next);
            self.list_room[e] = self.count[e] + LIST_SLACK;
            next += self.list_room[e];
        }
        self.slot_list.clear();
        self.slot_list.resize(next, usize::MAX);
        for (slot, &e) in self.expert_of_slot.iter().enumerate() {
            let end = &mut self.list[e].1;
            self.slot_list[*end] = slot;
            *end += 1;
        }
    }

    /// Lays the lists out again, keeping each one's order.
    fn compact_lists(&mut self) {
        let mut list = Vec::with_capacity(self.expert_of_slot.len() + LIST_SLACK * self.experts);
        for e in 0..self.experts {
            let start = list.len();
            list.extend_from_slice(self.slots_of(e));
            let len = list.len() - start;
            list.resize(start + len + LIST_SLACK, usize::MAX);
            self.list[e] = (start, start + len);
            self.list_room[e] = len + LIST_SLACK;
        }
        self.slot_list = list;
    }

    /// Appends `slot` to expert `e`'s list, moving the list to the end of the buffer when it
    /// has no room left, and laying all lists out again instead when the buffer has grown to
    /// four times its fresh size.
    fn push_slot(&mut self, e: usize, slot: usize) {
        let (start, end) = self.list[e];
        let len = end - start;
        if len == self.list_room[e] {
            let room = (2 * len).max(len + LIST_SLACK);
            let fresh = self.expert_of_slot.len() + LIST_SLACK * self.experts;
            if self.slot_list.len() + room > 4 * fresh {
                self.compact_lists();
            } else {
                let at = self.slot_list.len();
                self.slot_list.extend_from_within(start..end);
                self.slot_list.resize(at + room, usize::MAX);
                self.list[e] = (at, at + len);
                self.list_room[e] = room;
            }
        }
        let end = &mut self.list[e].1;
        self.slot_list[*end] = slot;
        *end += 1;
    }

    /// Removes `slot` from expert `e`'s list, keeping the others' order.
    fn remove_slot(&mut self, e: usize, slot: usize) {
        let (start, end) = self.list[e];
        if let Some(p) = self.slot_list[start..end].iter().position(|&s| s == slot) {
            self.slot_list.copy_within(start + p + 1..end, start + p);
            self.list[e].1 -= 1;
        }
    }

    /// Number of GPUs.
    pub(crate) fn gpus(&self) -> usize {
        self.inv_speed.len()
    }

    /// Whether GPU `g` holds expert `e`.
    #[inline]
    pub(crate) fn has(&self, g: usize, e: usize) -> bool {
        self.member[g * self.words + e / 64] & (1 << (e % 64)) != 0
    }

    /// GPU `g`'s experts as bits (expert `e` is bit `e % 64` of word `e / 64`), or `None`
    /// when the bits are laid out for another number of experts than `words` words hold.
    #[inline]
    pub(crate) fn member_words(&self, g: usize, words: usize) -> Option<&[u64]> {
        (words == self.words).then(|| &self.member[g * words..(g + 1) * words])
    }

    /// GPU `g`'s experts as bits, as [`SlotState::member_words`] gives them.
    #[inline]
    pub(crate) fn member_of(&self, g: usize) -> &[u64] {
        &self.member[g * self.words..(g + 1) * self.words]
    }

    /// Load of expert `e` in window `k`.
    #[inline]
    pub(crate) fn weight(&self, k: usize, e: usize) -> f64 {
        self.w[k * self.experts + e]
    }

    /// Load of one replica of `e` in window `k` if `e` had `c` replicas.
    #[inline]
    pub(crate) fn share(&self, k: usize, e: usize, c: usize) -> f64 {
        self.weight(k, e) / c as f64
    }

    /// `1 / speed` of GPU `g`.
    #[inline]
    pub(crate) fn inv_speed(&self, g: usize) -> f64 {
        self.inv_speed[g]
    }

    /// Load of GPU `g` in window `k`.
    #[inline]
    pub(crate) fn gpu_load(&self, k: usize, g: usize) -> f64 {
        self.load[k * self.gpus() + g]
    }

    /// Whether `mv` keeps the placement valid (every expert placed, no duplicate on a GPU).
    pub(crate) fn is_valid(&self, mv: Move) -> bool {
        match mv {
            Move::Swap(i, j) => {
                let (a, b) = (self.expert_of_slot[i], self.expert_of_slot[j]);
                let (g, h) = (self.gpu_of_slot[i], self.gpu_of_slot[j]);
                g != h && a != b && !self.has(g, b) && !self.has(h, a)
            }
            Move::Replace(i, b) => {
                let a = self.expert_of_slot[i];
                a != b && self.count[a] >= 2 && !self.has(self.gpu_of_slot[i], b)
            }
        }
    }

    /// The [`Move::Replace`] moves of [`SlotState::moves_touching`]`(g, true, f)`, in the same
    /// order, without enumerating the swaps.
    pub(crate) fn replacements_touching(&self, g: usize, mut f: impl FnMut(Move)) {
        // Only a slot whose expert has another replica can take another expert.
        let spare = self.spare_slots();
        for i in self.cluster.slot_range(g) {
            let a = self.expert_of_slot[i];
            if self.count[a] >= 2 {
                for b in 0..self.experts {
                    if b != a && !self.has(g, b) {
                        f(Move::Replace(i, b));
                    }
                }
            }
            for &j in &spare {
                if self.expert_of_slot[j] != a && !self.has(self.gpu_of_slot[j], a) {
                    f(Move::Replace(j, a));
                }
            }
        }
    }

    /// The slots whose expert has at least two replicas, in slot order.
    pub(crate) fn spare_slots(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.spare_slots_into(&mut out);
        out
    }

    /// [`SlotState::spare_slots`] into `out` (cleared first), read from the kept bits.
    pub(crate) fn spare_slots_into(&self, out: &mut Vec<usize>) {
        out.clear();
        for (k, &word) in self.spare.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                out.push(k * 64 + rest.trailing_zeros() as usize);
                rest &= rest - 1;
            }
        }
    }

    /// Sets slot `slot`'s bit of `spare` from its expert's replica count.
    fn mark_spare(&mut self, slot: usize) {
        let bit = 1 << (slot % 64);
        if self.count[self.expert_of_slot[slot]] >= 2 {
            self.spare[slot / 64] |= bit;
        } else {
            self.spare[slot / 64] &= !bit;
        }
    }

    /// Load of GPU `x` (window 0) after `Replace(slot, b)` when `x` holds another replica of
    /// the slot's expert: that expert's replicas get heavier, and `b`'s lighter if `x` holds
    /// it too. Added in the order of [`SlotState::effect`], so the value is the same.
    #[inline]
    pub(crate) fn load_of_other_holder(&self, slot: usize, b: usize, x: usize) -> f64 {
        let a = self.expert_of_slot[slot];
        let mut load =
            self.gpu_load(0, x) + (self.share_less[a] - self.share_now[a]) * self.inv_speed[x];
        if self.has(x, b) {
            load += (self.share_more[b] - self.share_now[b]) * self.inv_speed[x];
        }
        load
    }

    /// Calls `f` with every valid move that changes GPU `g`'s replicas: swaps of one of them with
    /// a replica elsewhere, and (with `replacements`) a replica of `g` becoming another expert or
    /// an expert of `g` gaining a replica in another GPU's slot.
    pub(crate) fn moves_touching(&self, g: usize, replacements: bool, mut f: impl FnMut(Move)) {
        let slots = self.expert_of_slot.len();
        for i in self.cluster.slot_range(g) {
            for j in 0..slots {
                let mv = Move::Swap(i, j);
                if self.is_valid(mv) {
                    f(mv);
                }
            }
            if !replacements {
                continue;
            }
            let a = self.expert_of_slot[i];
            for mv in (0..self.experts)
                .map(|b| Move::Replace(i, b))
                .chain((0..slots).map(|j| Move::Replace(j, a)))
            {
                if self.is_valid(mv) {
                    f(mv);
                }
            }
        }
    }

    /// Writes the GPUs `mv` changes into `touched` and their new loads (`windows` values each,
    /// GPU-major) into `new_load`.
    pub(crate) fn effect(&self, mv: Move, touched: &mut Vec<usize>, new_load: &mut Vec<f64>) {
        touched.clear();
        new_load.clear();
        let kk = self.windows;
        match mv {
            Move::Swap(i, j) => {
                let (a, b) = (self.expert_of_slot[i], self.expert_of_slot[j]);
                let (g, h) = (self.gpu_of_slot[i], self.gpu_of_slot[j]);
                touched.extend([g, h]);
                new_load.resize(2 * kk, 0.0);
                for k in 0..kk {
                    let d = self.share(k, a, self.count[a]) - self.share(k, b, self.count[b]);
                    new_load[k] = self.gpu_load(k, g) - d * self.inv_speed[g];
                    new_load[kk + k] = self.gpu_load(k, h) + d * self.inv_speed[h];
                }
            }
            Move::Replace(i, b) => {
                let shifts = self.count[self.expert_of_slot[i]] + self.count[b];
                if shifts <= LINEAR_LOOKUP_MAX {
                    self.replace_effect_linear(i, b, touched, new_load);
                } else {
                    self.replace_effect_sorted(i, b, touched, new_load);
                }
            }
        }
    }

    /// The shifts of `Replace(i, b)` in the order they are added: GPU and which change
    /// (0: slot `i`'s GPU, `a` out and `b` in; 1: another replica of `a`, now one fewer;
    /// 2: a replica of `b`, now one more).
    fn replace_shifts(&self, i: usize, b: usize) -> impl Iterator<Item = (usize, u8)> + '_ {
        let a = self.expert_of_slot[i];
        let others = self.slots_of(a).iter().filter(move |&&slot| slot != i);
        std::iter::once((self.gpu_of_slot[i], 0))
            .chain(others.map(|&slot| (self.gpu_of_slot[slot], 1)))
            .chain(
                self.slots_of(b)
                    .iter()
                    .map(|&slot| (self.gpu_of_slot[slot], 2)),
            )
    }

    /// Raw load change of window `k` for shift `kind` of `Replace(i, b)`.
    fn replace_delta(&self, i: usize, b: usize, kind: u8, k: usize) -> f64 {
        let a = self.expert_of_slot[i];
        let (ca, cb) = (self.count[a], self.count[b]);
        match kind {
            0 => self.share(k, b, cb + 1) - self.share(k, a, ca),
            1 => self.share(k, a, ca - 1) - self.share(k, a, ca),
            _ => self.share(k, b, cb + 1) - self.share(k, b, cb),
        }
    }

    /// [`SlotState::effect`] of a replacement touching few GPUs: each shift looks its GPU up
    /// among those already touched.
    fn replace_effect_linear(
        &self,
        i: usize,
        b: usize,
        touched: &mut Vec<usize>,
        new_load: &mut Vec<f64>,
    ) {
        for (g, kind) in self.replace_shifts(i, b) {
            self.push_shift(touched, new_load, g, |s, k| s.replace_delta(i, b, kind, k));
        }
    }

    /// [`SlotState::effect`] of a replacement touching many GPUs (an expert with thousands of
    /// replicas): the shifts are grouped by GPU with a stable sort, in `O(t log t)` instead of
    /// the linear look-up's `O(t^2)`. Each GPU's shifts are added in the same order, and the
    /// GPUs listed in order of first appearance, so the result is bit-identical.
    fn replace_effect_sorted(
        &self,
        i: usize,
        b: usize,
        touched: &mut Vec<usize>,
        new_load: &mut Vec<f64>,
    ) {
        let kk = self.windows;
        let shifts: Vec<(usize, u8)> = self.replace_shifts(i, b).collect();
        let mut order: Vec<usize> = (0..shifts.len()).collect();
        order.sort_by_key(|&t| shifts[t].0);
        // Runs of equal GPUs, each with its first shift's index (stable sort: the run's first).
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        let mut start = 0;
        for end in 1..=order.len() {
            if end == order.len() || shifts[order[end]].0 != shifts[order[start]].0 {
                runs.push((order[start], start, end));
                start = end;
            }
        }
        runs.sort_unstable_by_key(|r| r.0);
        for &(_, start, end) in &runs {
            let g = shifts[order[start]].0;
            touched.push(g);
            for k in 0..kk {
                let mut load = self.gpu_load(k, g);
                for &t in &order[start..end] {
                    load += self.replace_delta(i, b, shifts[t].1, k) * self.inv_speed[g];
                }
                new_load.push(load);
            }
        }
    }

    /// Shifts GPU `g`'s loads by `delta(k)` (raw, before the speed) in the buffers, adding it
    /// first if it is not there yet (a GPU may hold both experts of a replacement).
    fn push_shift(
        &self,
        touched: &mut Vec<usize>,
        new_load: &mut Vec<f64>,
        g: usize,
        delta: impl Fn(&Self, usize) -> f64,
    ) {
        let kk = self.windows;
        let t = touched.iter().position(|&x| x == g).unwrap_or_else(|| {
            touched.push(g);
            new_load.extend((0..kk).map(|k| self.gpu_load(k, g)));
            touched.len() - 1
        });
        for k in 0..kk {
            new_load[t * kk + k] += delta(self, k) * self.inv_speed[g];
        }
    }

    /// Applies `mv` (which must be valid) and recomputes the loads it changed exactly.
    pub(crate) fn apply(&mut self, mv: Move) {
        match mv {
            Move::Swap(i, j) => {
                let (a, b) = (self.expert_of_slot[i], self.expert_of_slot[j]);
                self.set_slot(i, b);
                self.set_slot(j, a);
                self.relink(a, i, j);
                self.relink(b, j, i);
                self.mark_spare(i);
                self.mark_spare(j);
                self.refresh(self.gpu_of_slot[i]);
                self.refresh(self.gpu_of_slot[j]);
            }
            Move::Replace(i, b) => {
                let a = self.expert_of_slot[i];
                self.set_slot(i, b);
                self.remove_slot(a, i);
                self.push_slot(b, i);
                self.count[a] -= 1;
                self.count[b] += 1;
                self.update_shares(a);
                self.update_shares(b);
                // The GPUs of both experts' replicas, slot `i`'s now among `b`'s (each GPU's
                // loads and order are recomputed from its slots, so the order does not matter).
                // Their slots' spare bits change with the counts.
                for e in [a, b] {
                    let (start, end) = self.list[e];
                    for k in start..end {
                        let slot = self.slot_list[k];
                        self.mark_spare(slot);
                        self.refresh(self.gpu_of_slot[slot]);
                    }
                }
            }
        }
    }

    /// Recomputes expert `e`'s cached shares after its replica count changed (a count of 1
    /// gives `share_less` the same infinite or NaN value [`SlotState::share`] would).
    fn update_shares(&mut self, e: usize) {
        let c = self.count[e];
        self.share_now[e] = self.share(0, e, c);
        self.share_more[e] = self.share(0, e, c + 1);
        self.share_less[e] = self.share(0, e, c.saturating_sub(1));
    }

    /// Puts `e` in `slot`, updating the membership bits (counts and lists are the caller's).
    fn set_slot(&mut self, slot: usize, e: usize) {
        let g = self.gpu_of_slot[slot];
        let old = self.expert_of_slot[slot];
        self.member[g * self.words + old / 64] &= !(1 << (old % 64));
        self.member[g * self.words + e / 64] |= 1 << (e % 64);
        self.expert_of_slot[slot] = e;
    }

    /// In the slot list of `e`, replaces `from` by `to`.
    fn relink(&mut self, e: usize, from: usize, to: usize) {
        let (start, end) = self.list[e];
        if let Some(s) = self.slot_list[start..end].iter_mut().find(|s| **s == from) {
            *s = to;
        }
    }

    /// GPU `g`'s slots by their replica's share of window 0, lightest first (ties by slot),
    /// with their [`order_key`].
    pub(crate) fn slots_by_share(&self, g: usize) -> &[(u64, usize)] {
        &self.by_share[self.cluster.slot_range(g)]
    }

    /// Recomputes GPU `g`'s loads and share order from its slots.
    fn refresh(&mut self, g: usize) {
        let range = self.cluster.slot_range(g);
        for t in range.clone() {
            let slot = self.by_share[t].1;
            let e = self.expert_of_slot[slot];
            self.by_share[t].0 = order_key(self.share_now[e]);
        }
        sort_nearly_sorted(&mut self.by_share[range]);
        let gpus = self.gpus();
        // Window 0 reads the cached shares (the same values, without a division per slot).
        let raw: f64 = self
            .cluster
            .slot_range(g)
            .map(|s| self.share_now[self.expert_of_slot[s]])
            .sum();
        self.load[g] = raw * self.inv_speed[g];
        for k in 1..self.windows {
            let raw: f64 = self
                .cluster
                .slot_range(g)
                .map(|s| {
                    let e = self.expert_of_slot[s];
                    self.share(k, e, self.count[e])
                })
                .sum();
            self.load[k * gpus + g] = raw * self.inv_speed[g];
        }
    }

    /// The slot-to-expert map.
    pub(crate) fn map(&self) -> &[usize] {
        &self.expert_of_slot
    }
}

/// A key whose integer order is `f64::total_cmp`'s order of `x` (sorting plain integer pairs
/// is several times cheaper than sorting with a comparison closure).
#[inline]
/// Sorts `v` (distinct pairs, so any sort gives the same order): by insertion when it is short,
/// which costs little when few entries are out of place (a move changes one or two shares of
/// a GPU, or a few loads), else with `sort_unstable`.
pub(crate) fn sort_nearly_sorted(v: &mut [(u64, usize)]) {
    if v.len() > NEARLY_SORTED_MAX {
        v.sort_unstable();
        return;
    }
    for k in 1..v.len() {
        let x = v[k];
        let mut at = k;
        while at > 0 && v[at - 1] > x {
            v[at] = v[at - 1];
            at -= 1;
        }
        v[at] = x;
    }
}

/// Lengths up to which [`sort_nearly_sorted`] sorts by insertion.
const NEARLY_SORTED_MAX: usize = 64;

pub(crate) fn order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// The `f64` whose [`order_key`] is `key`, bit for bit: a search reads a slot's share back
/// from [`SlotState::slots_by_share`] instead of looking it up.
#[inline]
pub(crate) fn key_value(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_consistent(s: &SlotState) {
        let fresh = SlotState::new(s.cluster, &[&s.w[..s.experts]], s.expert_of_slot.clone());
        assert_eq!(fresh.count, s.count);
        for (a, b) in fresh.load.iter().zip(&s.load) {
            assert!((a - b).abs() < 1e-9);
        }
        for g in 0..s.gpus() {
            for e in 0..s.experts {
                assert_eq!(s.has(g, e), fresh.has(g, e));
            }
            assert_eq!(s.slots_by_share(g), fresh.slots_by_share(g));
            let keys: Vec<u64> = s.slots_by_share(g).iter().map(|k| k.0).collect();
            assert!(keys.windows(2).all(|p| p[0] <= p[1]));
            for &(key, slot) in s.slots_by_share(g) {
                let share = s.share_now[s.expert_of_slot[slot]];
                assert_eq!(key_value(key).to_bits(), share.to_bits());
            }
        }
        // The kept spare bits list exactly the slots whose expert has another replica.
        let spare: Vec<usize> = (0..s.expert_of_slot.len())
            .filter(|&j| s.count[s.expert_of_slot[j]] >= 2)
            .collect();
        assert_eq!(s.spare_slots(), spare);
        assert_eq!(s.spare, fresh.spare);
    }

    #[test]
    fn key_values_read_back_every_f64_bit_for_bit() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::MIN_POSITIVE,
            5e-324,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            31541.666666666668,
        ] {
            assert_eq!(key_value(order_key(x)).to_bits(), x.to_bits(), "{x}");
        }
    }

    #[test]
    fn nearly_sorted_lists_sort_as_sort_unstable_does() {
        for n in [0, 1, 2, 9, 33, 64, 65, 200] {
            for seed in 0..20_u64 {
                let mut v: Vec<(u64, usize)> = (0..n)
                    .map(|k| (crate::optimal::mix(seed * 1000 + k as u64) % 50, k))
                    .collect();
                let mut expected = v.clone();
                expected.sort_unstable();
                sort_nearly_sorted(&mut v);
                assert_eq!(v, expected);
                // Sorted already, then a few entries out of place.
                if n > 3 {
                    v[n / 2].0 += 7;
                    v[1].0 = v[1].0.saturating_sub(9);
                    let mut expected = v.clone();
                    expected.sort_unstable();
                    sort_nearly_sorted(&mut v);
                    assert_eq!(v, expected);
                }
            }
        }
    }

    #[test]
    fn effects_match_applied_moves() {
        let c = PlacementCluster::new(vec![2, 2, 2], vec![1.0, 2.0, 1.0], vec![0; 3]).unwrap();
        let w = [9.0, 4.0, 2.0, 1.0];
        let mut s = SlotState::new(&c, &[&w], vec![0, 1, 0, 2, 3, 1]);
        let (mut touched, mut new) = (Vec::new(), Vec::new());
        // The first move touches GPU 0 twice: it holds both experts 0 and 1.
        for mv in [
            Move::Replace(2, 1),
            Move::Swap(0, 3),
            Move::Replace(1, 3),
            Move::Swap(4, 3),
        ] {
            assert!(s.is_valid(mv), "{mv:?}");
            s.effect(mv, &mut touched, &mut new);
            s.apply(mv);
            for (t, &g) in touched.iter().enumerate() {
                assert!((s.gpu_load(0, g) - new[t]).abs() < 1e-12, "{mv:?} GPU {g}");
            }
            assert_consistent(&s);
        }
        // Expert 0 now has one replica: replacing it would lose the expert.
        let only = s.slots_of(0)[0];
        assert!(!s.is_valid(Move::Replace(only, 1)));
    }

    #[test]
    fn slot_lists_keep_the_order_of_one_vec_per_expert() {
        // Many replacements onto few experts: lists outgrow their room, move to the end of
        // the buffer and get laid out again, and must keep the order a `Vec` per expert
        // (`retain` on removal, `push` on addition, renamed in place by a swap) would have.
        let c = PlacementCluster::new(vec![3; 12], vec![1.0; 12], vec![0; 12]).unwrap();
        let w: Vec<f64> = (1..=12).map(f64::from).collect();
        let map: Vec<usize> = (0..36)
            .map(|slot| (slot / 3 + 4 * (slot % 3)) % 12)
            .collect();
        let mut s = SlotState::new(&c, &[&w], map.clone());
        let mut lists = vec![Vec::new(); 12];
        for (slot, &e) in map.iter().enumerate() {
            lists[e].push(slot);
        }
        let mut applied = 0;
        for k in 0..8000_u64 {
            let r = crate::optimal::mix(k);
            #[allow(clippy::cast_possible_truncation)]
            let (x, y) = ((r % 36) as usize, ((r >> 32) % 36) as usize);
            let mv = if k % 3 == 0 {
                Move::Swap(x, y)
            } else {
                // Each expert in turn takes many replicas.
                Move::Replace(
                    x,
                    if k % 2 == 0 {
                        (k / 300) as usize % 12
                    } else {
                        y % 12
                    },
                )
            };
            if !s.is_valid(mv) {
                continue;
            }
            match mv {
                Move::Swap(i, j) => {
                    let (a, b) = (s.expert_of_slot[i], s.expert_of_slot[j]);
                    for (e, from, to) in [(a, i, j), (b, j, i)] {
                        if let Some(t) = lists[e].iter_mut().find(|t| **t == from) {
                            *t = to;
                        }
                    }
                }
                Move::Replace(i, b) => {
                    lists[s.expert_of_slot[i]].retain(|&t| t != i);
                    lists[b].push(i);
                }
            }
            s.apply(mv);
            applied += 1;
            for (e, list) in lists.iter().enumerate() {
                assert_eq!(s.slots_of(e), list.as_slice(), "expert {e} after {mv:?}");
            }
        }
        assert!(applied > 1000, "{applied}");
        assert!(s.slot_list.len() <= 4 * (36 + LIST_SLACK * 12));
        assert_consistent(&s);
    }

    #[test]
    fn sorted_replacement_effects_equal_the_linear_ones_bit_for_bit() {
        // 3 experts on 40 GPUs of 2 slots, two windows: each expert has about 27 replicas, so
        // a replacement shifts more than LINEAR_LOOKUP_MAX GPUs, many of them twice.
        let c = PlacementCluster::new(vec![2; 40], [1.0, 3.0].repeat(20), vec![0; 40]).unwrap();
        let (w0, w1) = ([7.0, 3.0, 1.3], [2.0, 5.5, 0.7]);
        let map: Vec<usize> = (0..80).map(|slot| (slot / 2 + slot % 2) % 3).collect();
        let s = SlotState::new(&c, &[&w0, &w1], map);
        assert!(s.count.iter().all(|&n| n > 20));
        let (mut t1, mut l1, mut t2, mut l2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut compared = 0;
        for i in 0..80 {
            for b in 0..3 {
                if !s.is_valid(Move::Replace(i, b)) {
                    continue;
                }
                s.replace_effect_linear(i, b, &mut t1, &mut l1);
                s.replace_effect_sorted(i, b, &mut t2, &mut l2);
                assert_eq!(t1, t2);
                assert_eq!(
                    l1.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    l2.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                );
                assert!(t1.len() > 20 && l1.iter().all(|x| x.is_finite()));
                t1.clear();
                l1.clear();
                t2.clear();
                l2.clear();
                compared += 1;
            }
        }
        assert!(compared > 50, "{compared}");
    }
}
