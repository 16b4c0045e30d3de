//! The shared match buffer: partial matches share their prefixes.
//!
//! Each binding of an event to a pattern element is a [`Node`] holding the
//! event's row and partition position, the element, and an edge to the node
//! it extends. A run holds only its last node; when runs split (a Kleene
//! take-or-proceed, an any-match take-or-ignore) both halves point at the
//! same node, so everything before the split is stored once.
//!
//! SASE+ and Flink's SharedBuffer key nodes by (event, state) and tag edges
//! with Dewey version numbers so that several runs can share one node and
//! still find their own path back. Here every node has exactly one outgoing
//! edge, so the path from a node to the root *is* its version: a run's
//! version is identified by its last node, and extraction follows parent
//! edges without comparing versions. Two runs that bind the same event to
//! the same element get two nodes (32 bytes each), where the versioned
//! scheme would store one node and two versioned edges.
//!
//! Nodes live in a [`slab::Slab`] and are reference-counted by runs, pending
//! matches and child nodes; a node is freed (and its parent released) when
//! its count drops to zero, iteratively, so a long Kleene chain cannot
//! overflow the stack.

use ahash::AHashMap;
use cep_core::EventObject;
use slab::Slab;

/// Index of a node; [`NIL`] is "no node".
pub type NodeId = u32;

/// The absent node (the parent of a first binding).
pub const NIL: NodeId = u32::MAX;

/// One binding of an event to an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Node {
    /// Input row of the event.
    pub row: u64,
    /// Position of the event in its partition.
    pub pos: u64,
    /// The node this one extends.
    pub parent: NodeId,
    /// References from runs, pending matches and children.
    refs: u32,
    /// Index of the positive element.
    pub elem: u16,
}

/// Slab-backed, reference-counted buffer of bindings.
///
/// # Examples
/// ```
/// use cep_nfa::buffer::{Buffer, NIL};
/// let mut b = Buffer::default();
/// let a = b.push(NIL, 0, 10, 0);          // a run binds row 10 to element 0
/// let x = b.push(a, 1, 11, 1);            // it splits: two runs extend `a`
/// let y = b.push(a, 1, 12, 1);
/// b.release(a);                           // the original run is gone
/// assert_eq!(b.len(), 3);
/// let mut path = Vec::new();
/// b.path(y, &mut path);
/// assert_eq!(path.iter().map(|n| n.row).collect::<Vec<_>>(), [10, 12]);
/// b.release(x);
/// b.release(y);
/// assert_eq!(b.len(), 0);
/// ```
#[derive(Debug, Default)]
pub struct Buffer {
    nodes: Slab<Node>,
    /// The event objects of nodes that keep one (bindings of a variable an
    /// `EMIT x.*` item names), indexed by node id; empty for every other
    /// query, which then pays one failed bounds check per node freed.
    objects: Vec<Option<EventObject>>,
    /// The bytes the kept objects hold (for the engine's state measure,
    /// which `--max-state` bounds).
    object_bytes: usize,
    /// The debts of bindings made before their remote calls were answered
    /// (lazy evaluation), indexed by node id; empty for every other query.
    debts: Vec<Option<Box<[Debt]>>>,
    /// Per call: the nodes whose debts name it.
    debt_refs: ahash::AHashMap<u64, u32>,
    /// Calls no node names any more, since the last
    /// [`take_unreferenced`](Self::take_unreferenced).
    unreferenced: Vec<u64>,
}

/// What a binding made under lazy remote evaluation owes: remote call
/// `call` must answer `want` for the binding to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Debt {
    /// The call (its `CallId`).
    pub call: u64,
    /// The answer the binding needs (`false` for `NOT f(…)`).
    pub want: bool,
}

impl Buffer {
    /// Adds a node extending `parent` (which gains a reference) and returns
    /// it with one reference, owned by the caller.
    pub fn push(&mut self, parent: NodeId, elem: u16, row: u64, pos: u64) -> NodeId {
        if parent != NIL {
            self.retain(parent);
        }
        let id = self.nodes.insert(Node { row, pos, parent, refs: 1, elem });
        NodeId::try_from(id).expect("more than 4 billion live buffer nodes")
    }

    /// Keeps `object` beside node `id` (freed with it): the event `x.*`
    /// shows of a binding of `x`.
    ///
    /// # Examples
    /// ```
    /// use cep_core::{EventObject, Sym};
    /// use cep_nfa::buffer::{Buffer, NIL};
    /// let mut b = Buffer::default();
    /// let first = b.push(NIL, 0, 10, 0);
    /// b.set_object(first, EventObject { ty: Sym::new("A"), ts: 5, fields: vec![] });
    /// let second = b.push(first, 1, 11, 1); // element 1 keeps no object
    /// let mut objects = Vec::new();
    /// b.objects_of(second, 0, &mut objects);
    /// assert_eq!(objects[0].ts, 5);
    /// b.release(first);
    /// b.release(second);
    /// assert_eq!(b.object_bytes(), 0);
    /// ```
    pub fn set_object(&mut self, id: NodeId, object: EventObject) {
        let i = id as usize;
        if self.objects.len() <= i {
            self.objects.resize_with(i + 1, || None);
        }
        self.object_bytes += object_size(&object);
        if let Some(old) = self.objects[i].replace(object) {
            self.object_bytes -= object_size(&old);
        }
    }

    /// Records that node `id` (a binding made before its remote calls were
    /// answered) owes `debts`; freed with it.
    pub fn set_debts(&mut self, id: NodeId, debts: Box<[Debt]>) {
        let i = id as usize;
        if self.debts.len() <= i {
            self.debts.resize_with(i + 1, || None);
        }
        for d in &debts {
            *self.debt_refs.entry(d.call).or_insert(0) += 1;
        }
        if let Some(old) = self.debts[i].replace(debts) {
            self.forget_debts(&old);
        }
    }

    #[cold]
    fn forget_debts(&mut self, debts: &[Debt]) {
        for d in debts {
            if let Some(n) = self.debt_refs.get_mut(&d.call) {
                *n -= 1;
                if *n == 0 {
                    self.debt_refs.remove(&d.call);
                    self.unreferenced.push(d.call);
                }
            }
        }
    }

    /// Appends to `out` (not cleared) the debts of the bindings from the
    /// first to `id`.
    pub fn debts_on_path(&self, mut id: NodeId, out: &mut Vec<Debt>) {
        if self.debt_refs.is_empty() {
            return;
        }
        while id != NIL {
            if let Some(Some(d)) = self.debts.get(id as usize) {
                out.extend_from_slice(d);
            }
            id = self.nodes[id as usize].parent;
        }
    }

    /// Whether some live node names remote call `call` in its debts.
    pub fn owes(&self, call: u64) -> bool {
        self.debt_refs.contains_key(&call)
    }

    /// Whether any live node owes a remote answer.
    pub fn has_debts(&self) -> bool {
        !self.debt_refs.is_empty()
    }

    /// Takes the calls no node has named since the last call: their
    /// answers are needed no more.
    pub fn take_unreferenced(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.unreferenced);
    }

    /// The bytes the objects kept beside nodes hold (0 for a query without
    /// an `EMIT x.*` item).
    pub fn object_bytes(&self) -> usize {
        self.object_bytes
    }

    /// The object kept beside node `id`, if any.
    pub fn object(&self, id: NodeId) -> Option<&EventObject> {
        self.objects.get(id as usize)?.as_ref()
    }

    /// Appends to `out` (not cleared) the objects of the nodes of element
    /// `elem` on the path from the first binding to `id`, in binding order.
    pub fn objects_of(&self, id: NodeId, elem: u16, out: &mut Vec<EventObject>) {
        let from = out.len();
        let mut cur = id;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if n.elem == elem
                && let Some(o) = self.object(cur)
            {
                out.push(o.clone());
            }
            cur = n.parent;
        }
        out[from..].reverse();
    }

    /// The debts of nodes with their ids, for a snapshot.
    pub(crate) fn saved_debts(&self) -> Vec<(u32, Vec<Debt>)> {
        self.debts.iter().enumerate().filter_map(|(i, d)| Some((i as u32, d.as_ref()?.to_vec()))).collect()
    }

    /// The kept objects with their node ids, for a snapshot.
    pub(crate) fn saved_objects(&self) -> Vec<(u32, EventObject)> {
        self.objects.iter().enumerate().filter_map(|(i, o)| Some((i as u32, o.clone()?))).collect()
    }

    /// The live nodes with their ids, for a snapshot.
    pub(crate) fn nodes(&self) -> Vec<(u32, Node)> {
        self.nodes.iter().map(|(i, n)| (i as u32, *n)).collect()
    }

    /// A buffer holding `nodes` (from [`nodes`](Self::nodes)), renumbered
    /// from 0 in their order (a saved id may be any `u32`: a slab indexed by
    /// it could be as large), and how their saved ids map to the new ones.
    /// Reference counts are left at 0 for [`count_refs`](Self::count_refs).
    /// An error if an id repeats, a parent is missing, a node's element is
    /// not below `elements`, or a chain of parents loops.
    pub(crate) fn from_nodes(
        nodes: Vec<(u32, Node)>,
        elements: usize,
    ) -> Result<(Buffer, AHashMap<u32, NodeId>), String> {
        let mut ids = AHashMap::with_capacity(nodes.len());
        for (i, (id, n)) in nodes.iter().enumerate() {
            if usize::from(n.elem) >= elements {
                return Err(format!("buffer node of row {} at an element the query lacks", n.row));
            }
            if ids.insert(*id, i as NodeId).is_some() {
                return Err(format!("buffer node {id} twice"));
            }
        }
        let mut slab = Slab::with_capacity(nodes.len());
        for (_, n) in nodes {
            let parent = match n.parent {
                NIL => NIL,
                p => *ids.get(&p).ok_or_else(|| format!("buffer node of row {} lacks its parent", n.row))?,
            };
            slab.insert(Node { parent, refs: 0, ..n });
        }
        // Each chain of parents is walked once: 1 marks the chain being
        // walked (met again, it loops), 2 a node whose chain ends.
        let mut state = vec![0u8; slab.len()];
        let mut chain = Vec::new();
        for start in 0..slab.len() {
            let mut cur = start as NodeId;
            while cur != NIL && state[cur as usize] == 0 {
                state[cur as usize] = 1;
                chain.push(cur);
                cur = slab[cur as usize].parent;
            }
            if cur != NIL && state[cur as usize] == 1 {
                return Err("a loop of buffer nodes".to_owned());
            }
            for id in chain.drain(..) {
                state[id as usize] = 2;
            }
        }
        Ok((Buffer { nodes: slab, objects: Vec::new(), object_bytes: 0, ..Buffer::default() }, ids))
    }

    /// Sets each node's reference count to the number of its children and
    /// of `refs` (runs and pending matches, [`NIL`] for none) naming it; an
    /// error if a reference names no node or a node has none.
    pub(crate) fn count_refs(&mut self, refs: impl Iterator<Item = NodeId>) -> Result<(), String> {
        let parents: Vec<NodeId> = self.nodes.iter().map(|(_, n)| n.parent).collect();
        for id in parents.into_iter().chain(refs) {
            if id == NIL {
                continue;
            }
            match self.nodes.get_mut(id as usize) {
                Some(n) => n.refs += 1,
                None => return Err(format!("a reference to buffer node {id}, which is missing")),
            }
        }
        match self.nodes.iter().find(|(_, n)| n.refs == 0) {
            Some((id, _)) => Err(format!("buffer node {id} that nothing refers to")),
            None => Ok(()),
        }
    }

    /// Adds a reference to `id`.
    #[inline]
    pub fn retain(&mut self, id: NodeId) {
        if id != NIL {
            self.nodes[id as usize].refs += 1;
        }
    }

    /// Drops a reference; frees the node and, in turn, its ancestors that
    /// become unreferenced.
    pub fn release(&mut self, mut id: NodeId) {
        while id != NIL {
            let node = &mut self.nodes[id as usize];
            node.refs -= 1;
            if node.refs > 0 {
                return;
            }
            let parent = node.parent;
            self.nodes.remove(id as usize);
            if let Some(Some(o)) = self.objects.get_mut(id as usize).map(Option::take) {
                self.object_bytes -= object_size(&o);
            }
            if let Some(Some(debts)) = self.debts.get_mut(id as usize).map(Option::take) {
                self.forget_debts(&debts);
            }
            id = parent;
        }
    }

    /// The node.
    #[inline]
    pub fn get(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    /// Writes the bindings from the first to `id` into `out` (cleared first).
    pub fn path(&self, id: NodeId, out: &mut Vec<Node>) {
        out.clear();
        let mut cur = id;
        while cur != NIL {
            let n = self.nodes[cur as usize];
            out.push(n);
            cur = n.parent;
        }
        out.reverse();
    }

    /// Live nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node is live.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Bytes per node.
    pub const NODE_BYTES: usize = std::mem::size_of::<Node>();
}

/// The memory an event object holds: itself and its fields.
pub(crate) fn object_size(o: &EventObject) -> usize {
    std::mem::size_of::<EventObject>() + o.fields.capacity() * std::mem::size_of::<(cep_core::Sym, cep_core::Value)>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: NodeId, elem: u16) -> Node {
        Node { row: 0, pos: 0, parent, refs: 7, elem }
    }

    /// Saved nodes come back renumbered, with their references recounted;
    /// what no buffer holds (a loop, a missing parent or referent, a node
    /// nothing names, an element the query lacks, an id twice) is an error.
    #[test]
    fn saved_nodes_are_checked_and_recounted() {
        let (mut b, ids) = Buffer::from_nodes(vec![(900, node(NIL, 0)), (5, node(900, 1))], 2).unwrap();
        assert_eq!((ids[&900], ids[&5]), (0, 1));
        assert_eq!(b.get(1).parent, 0);
        b.count_refs([1, 1].into_iter()).unwrap();
        assert_eq!((b.get(0).refs, b.get(1).refs), (1, 2));
        b.release(1);
        b.release(1);
        assert_eq!(b.len(), 0, "the recounted references free the chain");

        let err = |nodes: Vec<(u32, Node)>, refs: &[NodeId]| {
            Buffer::from_nodes(nodes, 2).and_then(|(mut b, _)| b.count_refs(refs.iter().copied())).unwrap_err()
        };
        assert_eq!(err(vec![(1, node(2, 0)), (2, node(1, 0))], &[0]), "a loop of buffer nodes");
        assert_eq!(err(vec![(1, node(3, 0))], &[0]), "buffer node of row 0 lacks its parent");
        assert_eq!(err(vec![(1, node(NIL, 0))], &[1]), "a reference to buffer node 1, which is missing");
        assert_eq!(err(vec![(1, node(NIL, 0)), (2, node(NIL, 0))], &[0]), "buffer node 1 that nothing refers to");
        assert_eq!(err(vec![(1, node(NIL, 2))], &[0]), "buffer node of row 0 at an element the query lacks");
        assert_eq!(err(vec![(1, node(NIL, 0)), (1, node(NIL, 0))], &[0]), "buffer node 1 twice");
    }

    /// Objects kept beside nodes go with them, and their bytes with them.
    #[test]
    fn objects_are_freed_with_their_nodes() {
        use cep_core::{Sym, Value};
        let mut b = Buffer::default();
        let object = |ts| EventObject { ty: Sym::new("A"), ts, fields: vec![(Sym::new("x"), Value::Int(ts))] };
        let root = b.push(NIL, 0, 0, 0);
        b.set_object(root, object(0));
        let child = b.push(root, 0, 1, 1);
        b.set_object(child, object(1));
        let other = b.push(root, 1, 2, 2);
        b.release(root);
        assert!(b.object_bytes() > 0);
        let mut out = Vec::new();
        b.objects_of(child, 0, &mut out);
        assert_eq!(out.iter().map(|o| o.ts).collect::<Vec<_>>(), [0, 1]);
        out.clear();
        b.objects_of(other, 0, &mut out);
        assert_eq!(out.iter().map(|o| o.ts).collect::<Vec<_>>(), [0]);
        b.release(child);
        assert!(b.object(child).is_none());
        b.release(other);
        assert_eq!((b.len(), b.object_bytes()), (0, 0));
        // A node reusing a freed slot has no object of its predecessor.
        let again = b.push(NIL, 0, 5, 5);
        assert!(b.object(again).is_none());
    }

    #[test]
    fn long_chain_frees_iteratively() {
        let mut b = Buffer::default();
        let mut cur = NIL;
        for i in 0..200_000u64 {
            let next = b.push(cur, 0, i, i);
            if cur != NIL {
                b.release(cur);
            }
            cur = next;
        }
        assert_eq!(b.len(), 200_000);
        b.release(cur);
        assert!(b.is_empty());
    }

    #[test]
    fn shared_prefix_survives_one_branch() {
        let mut b = Buffer::default();
        let root = b.push(NIL, 0, 1, 0);
        let l = b.push(root, 1, 2, 1);
        let r = b.push(root, 1, 3, 2);
        b.release(root);
        b.release(l);
        assert_eq!(b.len(), 2);
        assert_eq!(b.get(r).parent, root);
        b.release(r);
        assert!(b.is_empty());
    }
}
