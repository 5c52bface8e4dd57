//go:build !nodevnet

package solanadev

import (
	"crypto/ed25519"
	"fmt"
	"strconv"
	"unicode/utf8"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
)

// Runtime constants (mainnet's).
const (
	lamportsPerSignature = 5000
	// Rent: 3480 lamports per byte-year, exempt at two years, 128 bytes of
	// account overhead: rentExempt(0) = 890,880, rentExempt(165) = 2,039,280.
	rentPerByteYear = 3480
	rentOverhead    = 128
	blockhashWindow = 150
)

func rentExempt(dataLen int) uint64 {
	return uint64(rentOverhead+dataLen) * rentPerByteYear * 2
}

// account is one ledger account.
type account struct {
	Lamports   uint64           `json:"lamports"`
	Owner      solana.PublicKey `json:"owner"`
	Data       []byte           `json:"data,omitempty"`
	Executable bool             `json:"executable,omitempty"`
}

func (a *account) clone() *account {
	b := *a
	b.Data = append([]byte(nil), a.Data...)
	return &b
}

// rpcError is a JSON-RPC error as Solana's RPC answers it.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

// preflight builds the error of a transaction that failed simulation.
func preflight(reason string, txErr any, logs []string) *rpcError {
	if logs == nil {
		logs = []string{}
	}
	return &rpcError{Code: -32002, Message: "Transaction simulation failed: " + reason, Data: map[string]any{
		"accounts": nil, "err": txErr, "innerInstructions": nil, "logs": logs, "replacementBlockhash": nil,
		"returnData": nil, "unitsConsumed": 0,
	}}
}

// txExec executes one transaction over a copy-on-write view of accounts.
type txExec struct {
	keys    []solana.PublicKey
	header  solana.MessageHeader
	base    func(solana.PublicKey) *account
	overlay map[int]*account
}

func (x *txExec) isSigner(i int) bool { return i < int(x.header.NumRequiredSignatures) }

func (x *txExec) isWritable(i int) bool {
	ns := int(x.header.NumRequiredSignatures)
	if i < ns {
		return i < ns-int(x.header.NumReadonlySignedAccounts)
	}
	return i < len(x.keys)-int(x.header.NumReadonlyUnsignedAccounts)
}

// load returns the transaction's working copy of account i (an empty
// system account when it does not exist).
func (x *txExec) load(i int) *account {
	// Accounts are keyed by index; a key appears once in a message.
	if a, ok := x.overlay[i]; ok {
		return a
	}
	var a *account
	if b := x.base(x.keys[i]); b != nil {
		a = b.clone()
	} else {
		a = &account{Owner: systemProgram}
	}
	x.overlay[i] = a
	return a
}

// decodeTx parses a wire transaction and checks what the runtime's
// sanitizer checks.
func decodeTx(raw []byte) (*solana.Transaction, *rpcError) {
	tx, err := solana.TransactionFromDecoder(bin.NewBinDecoder(raw))
	if err != nil {
		return nil, &rpcError{Code: -32602, Message: "failed to deserialize solana_sdk::transaction::versioned::VersionedTransaction: " + err.Error()}
	}
	m := &tx.Message
	if m.IsVersioned() && len(m.AddressTableLookups) > 0 {
		return nil, &rpcError{Code: -32602, Message: "invalid transaction: address table lookups are not supported by the Veil devnet"}
	}
	bad := &rpcError{Code: -32602, Message: "invalid transaction: Transaction failed to sanitize accounts offsets correctly"}
	h := m.Header
	if int(h.NumRequiredSignatures) != len(tx.Signatures) || h.NumRequiredSignatures == 0 ||
		int(h.NumRequiredSignatures)+int(h.NumReadonlyUnsignedAccounts) > len(m.AccountKeys) ||
		h.NumReadonlySignedAccounts >= h.NumRequiredSignatures {
		return nil, bad
	}
	seen := map[solana.PublicKey]bool{}
	for _, k := range m.AccountKeys {
		if seen[k] {
			return nil, &rpcError{Code: -32602, Message: "invalid transaction: Transaction loads an address table account that doesn't exist"}
		}
		seen[k] = true
	}
	for _, ix := range m.Instructions {
		if int(ix.ProgramIDIndex) >= len(m.AccountKeys) || ix.ProgramIDIndex == 0 {
			return nil, bad
		}
		for _, a := range ix.Accounts {
			if int(a) >= len(m.AccountKeys) {
				return nil, bad
			}
		}
	}
	return tx, nil
}

// verifySignatures checks every signature against its key over the
// message bytes.
func verifySignatures(tx *solana.Transaction) bool {
	msg, err := tx.Message.MarshalBinary()
	if err != nil {
		return false
	}
	for i, sig := range tx.Signatures {
		k := tx.Message.AccountKeys[i]
		if !ed25519.Verify(ed25519.PublicKey(k[:]), msg, sig[:]) {
			return false
		}
	}
	return true
}

// execResult is the outcome of executing a transaction.
type execResult struct {
	fee     uint64
	logs    []string
	txErr   any    // nil on success; the TransactionError JSON otherwise
	reason  string // the simulation failure text
	changed map[int]*account
}

// execute runs tx's instructions (after its signatures, age and fee payer
// were checked) and the rent rule. The fee is charged in changed even when
// an instruction fails (only the fee payer then).
func execute(tx *solana.Transaction, base func(solana.PublicKey) *account) execResult {
	m := &tx.Message
	x := &txExec{keys: m.AccountKeys, header: m.Header, base: base, overlay: map[int]*account{}}
	fee := uint64(len(tx.Signatures)) * lamportsPerSignature
	res := execResult{fee: fee}
	payer := x.load(0)
	payer.Lamports -= fee
	pre := map[int]uint64{}
	for i := range m.AccountKeys {
		if b := base(m.AccountKeys[i]); b != nil {
			pre[i] = b.Lamports
		}
	}
	feeOnly := func() map[int]*account {
		p := base(m.AccountKeys[0]).clone()
		p.Lamports -= fee
		return map[int]*account{0: p}
	}
	for i, ix := range m.Instructions {
		prog := m.AccountKeys[ix.ProgramIDIndex]
		res.logs = append(res.logs, fmt.Sprintf("Program %s invoke [1]", prog))
		c := &ixCtx{tx: x, index: i, data: ix.Data, logs: &res.logs}
		for _, a := range ix.Accounts {
			c.accounts = append(c.accounts, int(a))
		}
		var err *instrErr
		switch prog {
		case systemProgram:
			err = runSystem(c)
		case tokenProgram:
			err = runToken(c)
		case ataProgram:
			err = runATA(c)
		case memoProgram:
			err = runMemo(c)
		case memoV1Program:
			if !utf8.Valid(ix.Data) {
				err = builtin("InvalidInstructionData")
			}
		case computeBudget:
		default:
			res.logs = res.logs[:len(res.logs)-1]
			res.txErr, res.reason = "ProgramAccountNotFound", "Attempt to load a program that does not exist"
			res.changed = feeOnly()
			return res
		}
		if err != nil {
			res.logs = append(res.logs, fmt.Sprintf("Program %s failed: %s", prog, err.Error()))
			res.txErr = map[string]any{"InstructionError": []any{i, err.errJSON()}}
			res.reason = fmt.Sprintf("Error processing Instruction %d: %s", i, describe(err))
			res.changed = feeOnly()
			return res
		}
		res.logs = append(res.logs, fmt.Sprintf("Program %s success", prog))
	}
	// Rent: a writable account may end empty or rent-exempt, or stay as
	// rent-paying as it was (never newly below the minimum).
	for i, a := range x.overlay {
		if !x.isWritable(i) || a.Lamports == 0 {
			continue
		}
		if a.Lamports < rentExempt(len(a.Data)) {
			was, existed := pre[i]
			if existed && was > 0 && was < rentExempt(len(a.Data)) && a.Lamports <= was {
				continue
			}
			res.txErr = map[string]any{"InsufficientFundsForRent": map[string]any{"account_index": i}}
			res.reason = fmt.Sprintf("Transaction results in an account (%d) with insufficient funds for rent", i)
			res.changed = feeOnly()
			return res
		}
	}
	for i, a := range x.overlay {
		if !x.isWritable(i) {
			b := base(m.AccountKeys[i])
			if b == nil && (a.Lamports != 0 || len(a.Data) != 0) || b != nil && (a.Lamports != b.Lamports || string(a.Data) != string(b.Data)) {
				res.txErr = map[string]any{"InstructionError": []any{0, "ReadonlyLamportChange"}}
				res.reason = "Error processing Instruction 0: instruction changed the balance of a read-only account"
				res.changed = feeOnly()
				return res
			}
			delete(x.overlay, i)
		}
	}
	res.changed = x.overlay
	return res
}

func describe(e *instrErr) string {
	if e.Custom >= 0 {
		return e.Error()
	}
	switch e.Name {
	case "MissingRequiredSignature":
		return "missing required signature for instruction"
	case "InvalidInstructionData":
		return "invalid instruction data"
	case "InvalidAccountData":
		return "invalid account data for instruction"
	case "NotEnoughAccountKeys":
		return "insufficient account keys for instruction"
	case "InvalidSeeds":
		return "Provided seeds do not result in a valid address"
	case "ReadonlyLamportChange":
		return "instruction changed the balance of a read-only account"
	case "ReadonlyDataModified":
		return "instruction modified data of a read-only account"
	}
	return e.Name
}

func u64s(v uint64) string { return strconv.FormatUint(v, 10) }
