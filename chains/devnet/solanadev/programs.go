//go:build !nodevnet

package solanadev

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/gagliardetto/solana-go"
)

// Program ids the devnet runs.
var (
	systemProgram  = solana.SystemProgramID
	tokenProgram   = solana.TokenProgramID
	ataProgram     = solana.SPLAssociatedTokenAccountProgramID
	memoProgram    = solana.MemoProgramID
	memoV1Program  = solana.MustPublicKeyFromBase58("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo")
	computeBudget  = solana.ComputeBudget
	nativeLoader   = solana.MustPublicKeyFromBase58("NativeLoader1111111111111111111111111111111")
	bpfLoader      = solana.BPFLoaderUpgradeableProgramID
	rentSysvar     = solana.SysVarRentPubkey
	programsAtBoot = []solana.PublicKey{systemProgram, tokenProgram, ataProgram, memoProgram, memoV1Program, computeBudget}
)

// Token account and mint layouts of the SPL token program.
const (
	tokenAccountLen = 165
	mintLen         = 82
)

// instrErr is a program's error: an InstructionError of the runtime.
// Custom >= 0 is a program error code (Custom(n)); otherwise Name is a
// built-in InstructionError variant.
type instrErr struct {
	Name   string
	Custom int64
	Log    string
}

func (e *instrErr) Error() string {
	if e.Custom >= 0 {
		return fmt.Sprintf("custom program error: 0x%x", e.Custom)
	}
	return e.Name
}

// errJSON is the error's JSON form inside {"InstructionError":[i, …]}.
func (e *instrErr) errJSON() any {
	if e.Custom >= 0 {
		return map[string]any{"Custom": e.Custom}
	}
	return e.Name
}

func builtin(name string) *instrErr           { return &instrErr{Name: name, Custom: -1} }
func custom(code int64, log string) *instrErr { return &instrErr{Custom: code, Log: log} }

// System program errors (SystemError) and token program errors (TokenError).
const (
	sysAccountAlreadyInUse    = 0
	sysResultWithNegativeLamp = 1
	tokInsufficientFunds      = 1
	tokMintMismatch           = 3
	tokOwnerMismatch          = 4
	tokAlreadyInUse           = 6
	tokUninitializedState     = 9
	tokNonNativeHasBalance    = 11
	tokMintDecimalsMismatch   = 18
)

// ixCtx is what a program sees of one instruction.
type ixCtx struct {
	tx       *txExec
	index    int // instruction index
	accounts []int
	data     []byte
	logs     *[]string
}

func (c *ixCtx) key(i int) solana.PublicKey { return c.tx.keys[c.accounts[i]] }
func (c *ixCtx) acct(i int) *account        { return c.tx.load(c.accounts[i]) }
func (c *ixCtx) signer(i int) bool          { return c.tx.isSigner(c.accounts[i]) }
func (c *ixCtx) writable(i int) bool        { return c.tx.isWritable(c.accounts[i]) }
func (c *ixCtx) log(format string, args ...any) {
	*c.logs = append(*c.logs, fmt.Sprintf(format, args...))
}

func (c *ixCtx) need(n int) *instrErr {
	if len(c.accounts) < n {
		return builtin("NotEnoughAccountKeys")
	}
	return nil
}

// debit and credit move lamports, checking the writable flags.
func (c *ixCtx) move(from, to int, lamports uint64) *instrErr {
	if lamports == 0 {
		return nil
	}
	if !c.writable(from) {
		return builtin("ReadonlyLamportChange")
	}
	if !c.writable(to) {
		return builtin("ReadonlyLamportChange")
	}
	f := c.acct(from)
	if f.Lamports < lamports {
		return custom(sysResultWithNegativeLamp, fmt.Sprintf("Transfer: insufficient lamports %d, need %d", f.Lamports, lamports))
	}
	f.Lamports -= lamports
	c.acct(to).Lamports += lamports
	return nil
}

func runSystem(c *ixCtx) *instrErr {
	if len(c.data) < 4 {
		return builtin("InvalidInstructionData")
	}
	switch binary.LittleEndian.Uint32(c.data) {
	case 0: // CreateAccount {lamports, space, owner}
		if len(c.data) < 4+8+8+32 {
			return builtin("InvalidInstructionData")
		}
		if err := c.need(2); err != nil {
			return err
		}
		lamports := binary.LittleEndian.Uint64(c.data[4:])
		space := binary.LittleEndian.Uint64(c.data[12:])
		owner := solana.PublicKeyFromBytes(c.data[20:52])
		if !c.signer(0) || !c.signer(1) {
			return builtin("MissingRequiredSignature")
		}
		to := c.acct(1)
		if to.Lamports > 0 || len(to.Data) > 0 || !to.Owner.Equals(systemProgram) {
			c.log("Create Account: account Address { address: %s, base: None } already in use", c.key(1))
			return custom(sysAccountAlreadyInUse, "")
		}
		if space > 10<<20 {
			return custom(3, "") // InvalidAccountDataLength
		}
		if len(c.acct(0).Data) > 0 {
			return builtin("InvalidArgument")
		}
		if err := c.move(0, 1, lamports); err != nil {
			return err
		}
		to = c.acct(1)
		to.Data = make([]byte, space)
		to.Owner = owner
		return nil
	case 2: // Transfer {lamports}
		if len(c.data) < 12 {
			return builtin("InvalidInstructionData")
		}
		if err := c.need(2); err != nil {
			return err
		}
		if !c.signer(0) {
			c.log("Transfer: `from` account %s must sign", c.key(0))
			return builtin("MissingRequiredSignature")
		}
		if len(c.acct(0).Data) > 0 {
			c.log("Transfer: `from` must not carry data")
			return builtin("InvalidArgument")
		}
		lamports := binary.LittleEndian.Uint64(c.data[4:])
		if err := c.move(0, 1, lamports); err != nil {
			if err.Log != "" {
				c.log("%s", err.Log)
			}
			return err
		}
		return nil
	}
	return builtin("InvalidInstructionData")
}

// tokenAccount is a decoded SPL token account.
type tokenAccount struct {
	Mint, Owner solana.PublicKey
	Amount      uint64
	State       byte
}

func decodeTokenAccount(d []byte) (tokenAccount, bool) {
	if len(d) != tokenAccountLen {
		return tokenAccount{}, false
	}
	t := tokenAccount{Mint: solana.PublicKeyFromBytes(d[:32]), Owner: solana.PublicKeyFromBytes(d[32:64]),
		Amount: binary.LittleEndian.Uint64(d[64:72]), State: d[108]}
	return t, t.State != 0
}

func encodeTokenAccount(mint, owner solana.PublicKey, amount uint64) []byte {
	d := make([]byte, tokenAccountLen)
	copy(d, mint[:])
	copy(d[32:], owner[:])
	binary.LittleEndian.PutUint64(d[64:], amount)
	d[108] = 1 // initialized
	return d
}

type mintState struct {
	Authority   *solana.PublicKey
	Supply      uint64
	Decimals    byte
	Initialized bool
}

func decodeMint(d []byte) (mintState, bool) {
	if len(d) != mintLen {
		return mintState{}, false
	}
	m := mintState{Supply: binary.LittleEndian.Uint64(d[36:44]), Decimals: d[44], Initialized: d[45] == 1}
	if binary.LittleEndian.Uint32(d[:4]) == 1 {
		k := solana.PublicKeyFromBytes(d[4:36])
		m.Authority = &k
	}
	return m, m.Initialized
}

func runToken(c *ixCtx) *instrErr {
	if len(c.data) < 1 {
		return builtin("InvalidInstructionData")
	}
	fail := func(code int64, msg string) *instrErr {
		c.log("Program log: Error: %s", msg)
		return custom(code, "")
	}
	owned := func(i int) bool { return c.acct(i).Owner.Equals(tokenProgram) }
	switch c.data[0] {
	case 20: // InitializeMint2 {decimals, mint_authority, freeze COption}
		c.log("Program log: Instruction: InitializeMint2")
		if err := c.need(1); err != nil {
			return err
		}
		if len(c.data) < 34 {
			return builtin("InvalidInstructionData")
		}
		a := c.acct(0)
		if !owned(0) || len(a.Data) != mintLen {
			return builtin("InvalidAccountData")
		}
		if a.Data[45] == 1 {
			return fail(tokAlreadyInUse, "AlreadyInUse")
		}
		if !c.writable(0) {
			return builtin("ReadonlyDataModified")
		}
		d := make([]byte, mintLen)
		binary.LittleEndian.PutUint32(d, 1)
		copy(d[4:36], c.data[2:34])
		d[44] = c.data[1]
		d[45] = 1
		a.Data = d
		return nil
	case 1, 16, 18: // InitializeAccount [acct, mint, owner, rent] / 2 {owner} / 3 {owner}
		c.log("Program log: Instruction: InitializeAccount")
		var owner solana.PublicKey
		switch c.data[0] {
		case 1:
			if err := c.need(3); err != nil {
				return err
			}
			owner = c.key(2)
		default:
			if err := c.need(2); err != nil {
				return err
			}
			if len(c.data) < 33 {
				return builtin("InvalidInstructionData")
			}
			owner = solana.PublicKeyFromBytes(c.data[1:33])
		}
		return initTokenAccount(c, 0, 1, owner)
	case 3, 12: // Transfer {amount} [src, dst, owner] / TransferChecked {amount, decimals} [src, mint, dst, owner]
		checked := c.data[0] == 12
		if checked {
			c.log("Program log: Instruction: TransferChecked")
		} else {
			c.log("Program log: Instruction: Transfer")
		}
		if len(c.data) < 9 || checked && len(c.data) < 10 {
			return builtin("InvalidInstructionData")
		}
		amount := binary.LittleEndian.Uint64(c.data[1:9])
		src, dst, auth := 0, 1, 2
		if checked {
			if err := c.need(4); err != nil {
				return err
			}
			dst, auth = 2, 3
		} else if err := c.need(3); err != nil {
			return err
		}
		if !owned(src) || !owned(dst) {
			return builtin("IncorrectProgramId")
		}
		s, ok1 := decodeTokenAccount(c.acct(src).Data)
		d, ok2 := decodeTokenAccount(c.acct(dst).Data)
		if !ok1 || !ok2 {
			return fail(tokUninitializedState, "UninitializedState")
		}
		if !s.Mint.Equals(d.Mint) {
			return fail(tokMintMismatch, "MintMismatch")
		}
		if checked {
			if !c.key(1).Equals(s.Mint) {
				return fail(tokMintMismatch, "MintMismatch")
			}
			m, ok := decodeMint(c.acct(1).Data)
			if !ok {
				return fail(tokUninitializedState, "UninitializedState")
			}
			if m.Decimals != c.data[9] {
				return fail(tokMintDecimalsMismatch, "MintDecimalsMismatch")
			}
		}
		if !c.key(auth).Equals(s.Owner) {
			return fail(tokOwnerMismatch, "owner does not match")
		}
		if !c.signer(auth) {
			return builtin("MissingRequiredSignature")
		}
		if s.Amount < amount {
			return fail(tokInsufficientFunds, "insufficient funds")
		}
		if !c.writable(src) || !c.writable(dst) {
			return builtin("ReadonlyDataModified")
		}
		if c.accounts[src] == c.accounts[dst] {
			return nil
		}
		binary.LittleEndian.PutUint64(c.acct(src).Data[64:72], s.Amount-amount)
		binary.LittleEndian.PutUint64(c.acct(dst).Data[64:72], d.Amount+amount)
		return nil
	case 7, 14: // MintTo {amount} [mint, dst, authority] / MintToChecked
		c.log("Program log: Instruction: MintTo")
		if err := c.need(3); err != nil {
			return err
		}
		if len(c.data) < 9 {
			return builtin("InvalidInstructionData")
		}
		amount := binary.LittleEndian.Uint64(c.data[1:9])
		m, ok := decodeMint(c.acct(0).Data)
		if !owned(0) || !ok {
			return fail(tokUninitializedState, "UninitializedState")
		}
		d, ok := decodeTokenAccount(c.acct(1).Data)
		if !owned(1) || !ok {
			return fail(tokUninitializedState, "UninitializedState")
		}
		if !d.Mint.Equals(c.key(0)) {
			return fail(tokMintMismatch, "MintMismatch")
		}
		if m.Authority == nil {
			return fail(5, "FixedSupply")
		}
		if !m.Authority.Equals(c.key(2)) {
			return fail(tokOwnerMismatch, "owner does not match")
		}
		if !c.signer(2) {
			return builtin("MissingRequiredSignature")
		}
		if !c.writable(0) || !c.writable(1) {
			return builtin("ReadonlyDataModified")
		}
		binary.LittleEndian.PutUint64(c.acct(0).Data[36:44], m.Supply+amount)
		binary.LittleEndian.PutUint64(c.acct(1).Data[64:72], d.Amount+amount)
		return nil
	case 9: // CloseAccount [acct, dest, owner]
		c.log("Program log: Instruction: CloseAccount")
		if err := c.need(3); err != nil {
			return err
		}
		t, ok := decodeTokenAccount(c.acct(0).Data)
		if !owned(0) || !ok {
			return fail(tokUninitializedState, "UninitializedState")
		}
		if t.Amount != 0 {
			return fail(tokNonNativeHasBalance, "Non-native account can only be closed if its balance is zero")
		}
		if !c.key(2).Equals(t.Owner) {
			return fail(tokOwnerMismatch, "owner does not match")
		}
		if !c.signer(2) {
			return builtin("MissingRequiredSignature")
		}
		if c.accounts[0] == c.accounts[1] {
			return builtin("InvalidAccountData")
		}
		if !c.writable(0) || !c.writable(1) {
			return builtin("ReadonlyLamportChange")
		}
		a := c.acct(0)
		c.acct(1).Lamports += a.Lamports
		a.Lamports = 0
		a.Data = nil
		a.Owner = systemProgram
		return nil
	}
	return builtin("InvalidInstructionData")
}

func initTokenAccount(c *ixCtx, acct, mint int, owner solana.PublicKey) *instrErr {
	a := c.acct(acct)
	if !a.Owner.Equals(tokenProgram) || len(a.Data) != tokenAccountLen {
		return builtin("InvalidAccountData")
	}
	if a.Data[108] != 0 {
		c.log("Program log: Error: AlreadyInUse")
		return custom(tokAlreadyInUse, "")
	}
	if _, ok := decodeMint(c.acct(mint).Data); !ok || !c.acct(mint).Owner.Equals(tokenProgram) {
		c.log("Program log: Error: InvalidMint")
		return custom(2, "")
	}
	if a.Lamports < rentExempt(tokenAccountLen) {
		c.log("Program log: Error: NotRentExempt")
		return custom(0, "")
	}
	if !c.writable(acct) {
		return builtin("ReadonlyDataModified")
	}
	a.Data = encodeTokenAccount(c.key(mint), owner, 0)
	return nil
}

// runATA is the associated token account program: Create (data empty or
// [0]) and CreateIdempotent ([1]), accounts [payer, ata, wallet, mint,
// system program, token program].
func runATA(c *ixCtx) *instrErr {
	idem := len(c.data) == 1 && c.data[0] == 1
	if len(c.data) > 1 || len(c.data) == 1 && c.data[0] > 1 {
		return builtin("InvalidInstructionData")
	}
	if idem {
		c.log("Program log: CreateIdempotent")
	} else {
		c.log("Program log: Create")
	}
	if err := c.need(6); err != nil {
		return err
	}
	want, _, err := solana.FindProgramAddress([][]byte{c.key(2).Bytes(), tokenProgram.Bytes(), c.key(3).Bytes()}, ataProgram)
	if err != nil || !want.Equals(c.key(1)) {
		c.log("Program log: Error: Associated address does not match seed derivation")
		return builtin("InvalidSeeds")
	}
	if !c.key(5).Equals(tokenProgram) {
		return builtin("IncorrectProgramId")
	}
	a := c.acct(1)
	if a.Owner.Equals(tokenProgram) {
		if t, ok := decodeTokenAccount(a.Data); ok && idem {
			if !t.Owner.Equals(c.key(2)) {
				c.log("Program log: Error: Owner does not match")
				return builtin("IllegalOwner")
			}
			return nil
		}
	}
	if a.Lamports > 0 && !a.Owner.Equals(systemProgram) || len(a.Data) > 0 {
		c.log("Create Account: account Address { address: %s, base: None } already in use", c.key(1))
		return custom(sysAccountAlreadyInUse, "")
	}
	if !c.signer(0) {
		return builtin("MissingRequiredSignature")
	}
	need := rentExempt(tokenAccountLen)
	if a.Lamports < need {
		if err := c.move(0, 1, need-a.Lamports); err != nil {
			if err.Log != "" {
				c.log("%s", err.Log)
			}
			return err
		}
	}
	a = c.acct(1)
	a.Owner = tokenProgram
	a.Data = make([]byte, tokenAccountLen)
	return initTokenAccount(c, 1, 3, c.key(2))
}

func runMemo(c *ixCtx) *instrErr {
	for i := range c.accounts {
		if !c.signer(i) {
			c.log("Program log: Error: Missing required signature for memo")
			return builtin("MissingRequiredSignature")
		}
		c.log("Program log: Signed by %s", c.key(i))
	}
	if !utf8.Valid(c.data) {
		c.log("Program log: Invalid UTF-8, from byte %d", bytes.IndexFunc(c.data, func(r rune) bool { return r == utf8.RuneError }))
		return builtin("InvalidInstructionData")
	}
	c.log("Program log: Memo (len %d): %q", len(c.data), string(c.data))
	return nil
}
