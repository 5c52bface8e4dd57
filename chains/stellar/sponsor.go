package stellar

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/big"

	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
)

// Sponsor is the server-wide Stellar relayer account (issue 35 items 2
// and 4): it activates an invoice's one-time account before the invoice is
// shown — CAP-33 sponsored reserves, so the account exists, trusts the
// invoice's asset and holds nothing of the sponsor's — and pays the fee of
// a withdrawal from such an account, which holds no XLM when it was paid
// in a token. The agent's own account never does either: sponsorship is
// public, and an agent-sponsored address would be linked to its agent
// (docs/chains-stellar.md, "Invoice destinations").
type Sponsor interface {
	// Address is the sponsor's account (G…).
	Address() string
	// SignTransaction signs hash, the network hash of the transaction
	// envelope (unsigned XDR) whose source the sponsor is; cost is what
	// it costs the sponsor (a relayer signs it as its own spend).
	SignTransaction(ctx context.Context, hash, envelope []byte, passphrase string, cost SponsorCost) ([]byte, error)
}

// SponsorCost is what one sponsored transaction costs the sponsor: the
// fee, plus the reserves an activation locks (they come back when the
// account is merged).
type SponsorCost struct {
	// Key is the transaction's idempotency key.
	Key string
	// Account is the one-time account sponsored or paid for.
	Account string
	// Stroops is the fee plus the reserves locked, in stroops.
	Stroops int64
	// Fee is the fee alone, in stroops.
	Fee int64
}

type sponsorBox struct{ s Sponsor }

// SetSponsor makes s the connector's sponsor (nil: none). Without one,
// PrepareDestination reports chains.ErrUnavailable.
func (c *Connector) SetSponsor(s Sponsor) {
	if s == nil {
		c.spon.Store(nil)
		return
	}
	c.spon.Store(&sponsorBox{s})
}

func (c *Connector) sponsor() Sponsor {
	if b := c.spon.Load(); b != nil {
		return b.s
	}
	return nil
}

// PreparesDestinations says whether invoice destinations are activated
// (a sponsor is configured): then a wallet's plain payment reaches any
// invoice's one-time account, in XLM or a configured credit asset.
func (c *Connector) PreparesDestinations() bool { return c.sponsor() != nil }

// keySponsor is a Sponsor whose key is in this process.
type keySponsor struct {
	priv ed25519.PrivateKey
	addr string
}

// KeySponsor is a Sponsor signing with the ed25519 key of seed, held in
// this process (tests, a devnet; a server's relayer keeps its key in the
// enclave).
func KeySponsor(seed [32]byte) Sponsor {
	priv := ed25519.NewKeyFromSeed(seed[:])
	addr, _ := strkey.Encode(strkey.VersionByteAccountID, priv.Public().(ed25519.PublicKey))
	return keySponsor{priv: priv, addr: addr}
}

func (k keySponsor) Address() string { return k.addr }

func (k keySponsor) SignTransaction(_ context.Context, hash, _ []byte, _ string, _ SponsorCost) ([]byte, error) {
	if len(hash) != 32 {
		return nil, errors.New("stellar sponsor: a transaction hash is 32 bytes")
	}
	return ed25519.Sign(k.priv, hash), nil
}

// PrepareDestination activates address, the one-time account of key
// (key.EphemeralPub set), so that a plain payment of asset reaches it: one
// transaction from the sponsor,
//
//	beginSponsoringFutureReserves(P), createAccount(P, 0),
//	[changeTrust(asset) source P], endSponsoringFutureReserves source P
//
// signed by the sponsor and by P's one-time key, which the enclave signs
// without a spend only for exactly this shape (enclave/txcheck
// StellarActivation). The sponsor locks 1 XLM (+ 0.5 per trustline) until
// the account is merged at its withdrawal. An account already activated
// for asset answers at once; idempotencyKey makes a retry exactly once.
func (c *Connector) PrepareDestination(ctx context.Context, key chains.KeyRef, address, assetSym, idempotencyKey string) (chains.TxResult, error) {
	sp := c.sponsor()
	if sp == nil {
		return chains.TxResult{}, fmt.Errorf("%w: no Stellar sponsor is configured on this server, so an invoice's one-time account cannot be activated", chains.ErrUnavailable)
	}
	if len(key.EphemeralPub) == 0 {
		return chains.TxResult{}, fmt.Errorf("%w: activation is signed by the one-time key (no ephemeral key given)", chains.ErrInvalidAddress)
	}
	p, err := parseAccount(address)
	if err != nil {
		return chains.TxResult{}, err
	}
	d, err := c.Asset(assetSym) // the invoice's asset, from outside a payment request
	if err != nil {
		return chains.TxResult{}, err
	}
	a := stellarAsset(d)
	k := intents.KeyOr(idempotencyKey, c.opts.Rand)
	fp := intents.Fingerprint("activate", p, a.key())
	build := func(context.Context) ([]txnbuild.Operation, txnbuild.Memo, error) {
		ops := []txnbuild.Operation{
			&txnbuild.BeginSponsoringFutureReserves{SponsoredID: p},
			&txnbuild.CreateAccount{Destination: p, Amount: "0"},
		}
		if !a.native() {
			ops = append(ops, &txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: a.txn().(txnbuild.CreditAsset)}, Limit: "922337203685.4775807", SourceAccount: p})
		}
		return append(ops, &txnbuild.EndSponsoringFutureReserves{SourceAccount: p}), nil, nil
	}
	if it, _, err := c.ledger.Prior(ctx, k, fp); err != nil {
		return chains.TxResult{}, err
	} else if it != nil {
		return c.run(ctx, k, it, build)
	}
	if acc, found, err := c.account(ctx, p); err != nil {
		return chains.TxResult{}, err
	} else if found {
		if _, ok := lineBalance(acc, a); ok {
			return chains.TxResult{}, nil
		}
		return chains.TxResult{}, fmt.Errorf("%w: %s already exists without a %s trustline", chains.ErrInvalidAddress, p, a.code)
	}
	it := &intent{Op: "activation", Fingerprint: fp, Source: sp.Address(), KeyRef: key,
		Params: map[string]string{"account": p, "asset": a.key(), "key": k}}
	return c.run(ctx, k, it, build)
}

// sponsoredBy answers the sponsor configured when it sponsors addr's
// account: a withdrawal from it is then sent with the sponsor as the
// transaction's source (it pays the fee; the account may hold no XLM).
func (c *Connector) sponsoredBy(ctx context.Context, addr string) (string, error) {
	sp := c.sponsor()
	if sp == nil {
		return "", nil
	}
	acc, found, err := c.account(ctx, addr)
	if err != nil || !found || acc.Sponsor != sp.Address() {
		return "", err
	}
	return sp.Address(), nil
}

// withSource makes src the source of each operation (those a sponsored
// withdrawal uses), the transaction's source being the sponsor.
func withSource(ops []txnbuild.Operation, src string) []txnbuild.Operation {
	for _, op := range ops {
		switch o := op.(type) {
		case *txnbuild.Payment:
			o.SourceAccount = src
		case *txnbuild.CreateAccount:
			o.SourceAccount = src
		case *txnbuild.ChangeTrust:
			o.SourceAccount = src
		case *txnbuild.AccountMerge:
			o.SourceAccount = src
		case *txnbuild.ClaimClaimableBalance:
			o.SourceAccount = src
		}
	}
	return ops
}

var _ chains.DestinationPreparer = (*Connector)(nil)

// UseRelayer makes the server's Stellar relayer (chains.RelayerUser,
// docs/operations.md "Relayers") the sponsor: its key is in the enclave,
// and each transaction it signs is a spend of the relayer's own (native
// XLM: the fee and the reserves an activation locks, recipient the
// one-time account), checked by the relayer's policy.
func (c *Connector) UseRelayer(r *chains.Relayer) {
	if r == nil {
		return
	}
	c.SetSponsor(relayerSponsor{c: c, r: r})
}

var _ chains.RelayerUser = (*Connector)(nil)

type relayerSponsor struct {
	c *Connector
	r *chains.Relayer
}

func (s relayerSponsor) Address() string { return s.r.Address }

func (s relayerSponsor) SignTransaction(ctx context.Context, hash, _ []byte, _ string, cost SponsorCost) ([]byte, error) {
	if s.c.opts.Signer == nil {
		return nil, errors.New("stellar: no Signer configured")
	}
	sig, err := s.c.opts.Signer.Sign(ctx, chains.SpendRequest(s.r.Key, hash,
		s.c.NativeAsset().Spend("sponsor/"+cost.Key, s.r.Key.AgentID, chains.NewAmount(big.NewInt(cost.Stroops), Decimals), cost.Account)))
	if err == nil {
		s.r.Paid(big.NewInt(cost.Fee))
	}
	return sig, err
}

// relayerFee is the fee the relayer takes, in base units of a, from a
// withdrawal it pays for (chains.Relayer.Fee, --relayer-fee; default 0.01
// USDC on Stellar): 0 when the sponsor is not the relayer or has no fee
// for a.
func (c *Connector) relayerFee(a asset) (*big.Int, error) {
	rs, ok := c.sponsor().(relayerSponsor)
	if !ok {
		return new(big.Int), nil
	}
	f := rs.r.Fee(a.code)
	if f == "" {
		return new(big.Int), nil
	}
	v, err := chains.ParseAmount(f, Decimals)
	if err != nil {
		return nil, fmt.Errorf("stellar: the relayer's %s fee %q: %w", a.code, f, err)
	}
	if v.Sign() < 0 {
		return nil, fmt.Errorf("stellar: the relayer's %s fee %q is negative", a.code, f)
	}
	return v, nil
}

// relayerTrust is the relayer's changeTrust(a) (source: the transaction's,
// the relayer) when it has no trustline for a credit asset a yet, so that
// its fee in a can reach it; nothing for XLM or a trustline it has. Its
// reserve (0.5 XLM) is the relayer's own, for good.
func (c *Connector) relayerTrust(ctx context.Context, rel string, a asset) ([]txnbuild.Operation, error) {
	if a.native() || rel == a.issuer {
		return nil, nil
	}
	acc, _, err := c.account(ctx, rel)
	if err != nil {
		return nil, err
	}
	if _, ok := lineBalance(acc, a); ok {
		return nil, nil
	}
	return []txnbuild.Operation{&txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: a.txn().(txnbuild.CreditAsset)}, Limit: "922337203685.4775807"}}, nil
}
