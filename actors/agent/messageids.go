package agent

// Message ids (issue 38 item 1). Ids are unique and increasing per agent,
// so key order is append order in every conversation. The agent's record
// holds the counter (Record.LastMessageID), but a chat turn does not
// rewrite the record to move it: that was one more B+tree leaf per turn in
// the single bbolt committer. Instead an activation reserves a block of
// ids in the record, written with the first append that needs it, and
// hands them out from memory; a new activation (or a crash) starts a new
// block above the record's counter, leaving a gap. Because the record's
// counter is always at least every id handed out, a build that still moves
// the counter per message (d69a0d6 and later, rolling upgrades in either
// direction) numbers above them too: no key collides, no order breaks.

// messageBlock is how many ids one write of the agent's record reserves.
const messageBlock = 1024

// reserveMessageIDs answers the first of n consecutive fresh message ids
// and, when the reserved block cannot cover them, the agent's record to
// write in the same commit (a new block, starting above the record's
// counter). Nothing changes until the caller's commit succeeds and it calls
// usedMessageIDs.
func (a *Actor) reserveMessageIDs(n int) (first int64, next *Record) {
	if a.nextMessageID != 0 && a.nextMessageID+int64(n)-1 <= a.rec.LastMessageID {
		return a.nextMessageID, nil
	}
	next = a.rec.clone()
	first = next.LastMessageID + 1
	next.LastMessageID += max(int64(n), messageBlock)
	return first, next
}

// usedMessageIDs records that the ids up to last are taken, once their
// commit succeeded.
func (a *Actor) usedMessageIDs(last int64) { a.nextMessageID = last + 1 }

// dropMessageBlock ends the reserved block, for a writer that numbers a
// message from the record's counter itself (systemMessageOps): the next
// append reserves above it.
func (a *Actor) dropMessageBlock() { a.nextMessageID = 0 }
