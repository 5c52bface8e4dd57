// Package txcheck decides, inside the enclave, whether a transaction a
// no-value sign request (chains.NoValueRequest) asks to sign really moves
// no value. It decodes the transaction, checks that the payload to sign is
// that transaction's signing hash (or message), and refuses anything that
// can move value — or that it cannot decode: when in doubt, it refuses.
//
// What counts as moving value, per chain family:
//
//   - EVM: a non-zero value; a contract creation; calldata whose selector
//     is an ERC-20/721 transfer, transferFrom, approve, increaseAllowance,
//     setApprovalForAll, safeTransferFrom or permit, or a StealthSender
//     payment (sendNative, sendToken). A call of an EIP-3009
//     transferWithAuthorization passes: it moves the tokens of its `from`
//     under from's own signature (which, when it is an agent's, was signed
//     as a spend: see Authorization), and costs the submitter only gas. Veil
//     settles x402 payments to its invoices this way (docs/x402.md).
//   - Stellar: any operation that pays or can pay (payment, create account,
//     path payments, account merge, claimable balances, clawbacks, offers,
//     liquidity pool deposits and withdrawals, sponsorship, set options,
//     allow trust, invoking a contract), except a native payment of at most
//     MaxMarkerStroops (the 1-stroop marker payment that lists a name
//     registration in the registry's history). Only manage data, bump
//     sequence, change trust and that marker pass — and, signed by a
//     one-time key, the sponsored activation of that key's own account
//     (StellarActivation; the provider checks the key).
//   - Solana: any system program instruction other than a transfer of 0
//     lamports, any SPL token or token-2022 instruction, any associated
//     token account instruction (it pays rent); only the memo program,
//     compute budget and that zero transfer pass.
package txcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	bin "github.com/gagliardetto/binary"
	solanago "github.com/gagliardetto/solana-go"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/veilhq/veil/chains"
)

// ErrMovesValue reports a no-value request whose transaction moves value
// (or may: one that cannot be decoded).
var ErrMovesValue = errors.New("the transaction moves value (or cannot be shown not to); sign it as a spend")

// MaxMarkerStroops is the largest native payment a no-value Stellar
// transaction may carry (the registry's marker payment).
const MaxMarkerStroops = 1

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMovesValue, fmt.Sprintf(format, args...))
}

// NoValue returns nil when req's transaction provably moves no value.
func NoValue(req chains.SignRequest) error {
	switch req.Key.Chain.Family() {
	case chains.FamilyEVM:
		return evmNoValue(req.Payload, req.Unsigned)
	case chains.FamilyStellar:
		if len(req.Key.EphemeralPub) > 0 {
			// A one-time key's own sponsored activation; the provider
			// checks that it signs with P's key (StellarActivation).
			if _, err := StellarActivation(req); err == nil {
				return nil
			}
		}
		return stellarNoValue(req.Payload, req.Unsigned, req.Network)
	case chains.FamilySolana:
		return solanaNoValue(req.Payload)
	}
	return refuse("unknown chain %q", req.Key.Chain)
}

func selector(sig string) [4]byte { return [4]byte(crypto.Keccak256([]byte(sig))[:4]) }

// evmValueSelectors are the calls that move or authorise moving value.
var evmValueSelectors = map[[4]byte]string{
	selector("transfer(address,uint256)"):                                     "transfer",
	selector("transferFrom(address,address,uint256)"):                         "transferFrom",
	selector("approve(address,uint256)"):                                      "approve",
	selector("increaseAllowance(address,uint256)"):                            "increaseAllowance",
	selector("setApprovalForAll(address,bool)"):                               "setApprovalForAll",
	selector("safeTransferFrom(address,address,uint256)"):                     "safeTransferFrom",
	selector("safeTransferFrom(address,address,uint256,bytes)"):               "safeTransferFrom",
	selector("permit(address,address,uint256,uint256,uint8,bytes32,bytes32)"): "permit",
	selector("sendNative(address,bytes,bytes1)"):                              "StealthSender.sendNative",
	selector("sendToken(address,uint256,address,bytes,bytes1)"):               "StealthSender.sendToken",
}

func evmNoValue(payload, unsigned []byte) error {
	if len(unsigned) == 0 {
		return refuse("no transaction to decode was given with the digest")
	}
	var tx types.Transaction
	if err := tx.UnmarshalBinary(unsigned); err != nil {
		return refuse("the transaction does not decode: %v", err)
	}
	if tx.ChainId() == nil || tx.ChainId().Sign() <= 0 {
		return refuse("the transaction names no chain id")
	}
	h := types.LatestSignerForChainID(tx.ChainId()).Hash(&tx)
	if !bytes.Equal(h[:], payload) {
		return refuse("the digest to sign is not the given transaction's signing hash")
	}
	if tx.Value() != nil && tx.Value().Sign() != 0 {
		return refuse("it sends %s wei", tx.Value())
	}
	if tx.To() == nil {
		return refuse("it creates a contract")
	}
	if len(tx.AccessList()) > 0 || len(tx.BlobHashes()) > 0 || len(tx.SetCodeAuthorizations()) > 0 {
		return refuse("it carries an access list, blobs or code authorisations")
	}
	if data := tx.Data(); len(data) >= 4 {
		if name, ok := evmValueSelectors[[4]byte(data[:4])]; ok {
			return refuse("it calls %s", name)
		}
	} else if len(data) > 0 {
		return refuse("its calldata is shorter than a selector")
	}
	return nil
}

func stellarNoValue(payload, unsigned []byte, passphrase string) error {
	if len(unsigned) == 0 || passphrase == "" {
		return refuse("no transaction envelope and network to decode were given with the hash")
	}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshal(unsigned, &env); err != nil {
		return refuse("the transaction envelope does not decode: %v", err)
	}
	if env.Type != xdr.EnvelopeTypeEnvelopeTypeTx {
		return refuse("envelope type %s (only a plain transaction is signed without a spend)", env.Type)
	}
	h, err := network.HashTransactionInEnvelope(env, passphrase)
	if err != nil {
		return refuse("hash the transaction: %v", err)
	}
	if !bytes.Equal(h[:], payload) {
		return refuse("the hash to sign is not the given transaction's hash")
	}
	for i, op := range env.Operations() {
		switch op.Body.Type {
		case xdr.OperationTypeManageData, xdr.OperationTypeBumpSequence, xdr.OperationTypeChangeTrust:
		case xdr.OperationTypePayment:
			p := op.Body.MustPaymentOp()
			if p.Asset.Type != xdr.AssetTypeAssetTypeNative || p.Amount < 0 || p.Amount > MaxMarkerStroops {
				return refuse("operation %d pays %d units of %s", i, p.Amount, p.Asset.StringCanonical())
			}
		default:
			return refuse("operation %d is a %s", i, op.Body.Type)
		}
	}
	return nil
}

// Solana program ids that are allowed in a no-value transaction.
var (
	memoV1          = solanago.MustPublicKeyFromBase58("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo")
	computeBudgetID = solanago.MustPublicKeyFromBase58("ComputeBudget111111111111111111111111111111")
)

func solanaNoValue(payload []byte) error {
	var msg solanago.Message
	if err := msg.UnmarshalWithDecoder(bin.NewBinDecoder(payload)); err != nil {
		return refuse("the message does not decode: %v", err)
	}
	for i, ix := range msg.Instructions {
		prog, err := msg.Program(ix.ProgramIDIndex)
		if err != nil {
			return refuse("instruction %d names no program: %v", i, err)
		}
		switch {
		case prog.Equals(solanago.MemoProgramID), prog.Equals(memoV1), prog.Equals(computeBudgetID):
		case prog.Equals(solanago.SystemProgramID):
			// Transfer is instruction 2 with a little-endian u64 of lamports.
			d := ix.Data
			if len(d) != 12 || binary.LittleEndian.Uint32(d[:4]) != 2 || binary.LittleEndian.Uint64(d[4:]) != 0 {
				return refuse("instruction %d is a system instruction that is not a transfer of 0 lamports", i)
			}
		default:
			return refuse("instruction %d calls program %s", i, prog)
		}
	}
	return nil
}
