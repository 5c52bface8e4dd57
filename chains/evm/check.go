package evm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/bindings"
	"github.com/veilhq/veil/chains/internal/connopts"
)

// ErrMisconfigured reports a configured address that does not hold what the
// configuration says: no code (an ordinary account, a typo, another
// network's address), a StealthSender wired to another announcer, a token
// with other decimals. New refuses to connect with it, and a payment whose
// contract fails the check at run time is refused before anything is
// signed: value sent to an address without the expected code would be lost
// without an announcement.
var ErrMisconfigured = errors.New("evm: contract configuration does not match the chain")

// envVar is the name of the variable that configures what of chain.
func envVar(chain chains.ID, what string) string {
	return "VEIL_EVM_" + strings.ToUpper(string(chain)) + "_" + what
}

func (c *Connector) misconfigured(what string, addr common.Address, format string, args ...any) error {
	return fmt.Errorf("%w: %s=%s on %s (chain id %d): %s", ErrMisconfigured, envVar(c.cfg.Chain, what), addr.Hex(), c.cfg.Chain,
		c.cfg.ChainID, fmt.Sprintf(format, args...))
}

// Check verifies every configured contract against the chain: code exists
// at the announcer (when a StealthSender is configured), the StealthSender,
// the name registry and every token; the StealthSender announces through
// the configured announcer; each token's decimals() is the configured
// precision. The error names the VEIL_EVM_<CHAIN>_* variable to fix and
// matches ErrMisconfigured (or chains.ErrUnavailable when the node could not
// answer).
func (c *Connector) Check(ctx context.Context) error {
	var errs []error
	if c.cfg.Sender != (common.Address{}) {
		if err := c.requireCode(ctx, c.cfg.Announcer, "ANNOUNCER"); err != nil {
			errs = append(errs, err)
		}
		if err := c.requireCode(ctx, c.cfg.Sender, "SENDER"); err != nil {
			errs = append(errs, err)
		} else {
			var ann common.Address
			err := c.view(ctx, c.cfg.Sender, c.sender.PackAnnouncer(), func(out []byte) (err error) {
				ann, err = c.sender.UnpackAnnouncer(out)
				return err
			})
			switch {
			case err != nil:
				errs = append(errs, c.viewFailed(err, "check sender", "SENDER", c.cfg.Sender, "not a StealthSender (announcer() failed: %v); deploy one with `veild contracts deploy`"))
			case ann != c.cfg.Announcer:
				errs = append(errs, c.misconfigured("SENDER", c.cfg.Sender, "this StealthSender announces through %s, but %s is %s; set the variable to the sender's announcer or deploy a sender for this one",
					ann.Hex(), envVar(c.cfg.Chain, "ANNOUNCER"), c.cfg.Announcer.Hex()))
			}
		}
	}
	if c.cfg.Names != (common.Address{}) {
		if err := c.requireCode(ctx, c.cfg.Names, "NAMES"); err != nil {
			errs = append(errs, err)
		} else {
			err := c.view(ctx, c.cfg.Names, c.names.PackNameOf(common.Address{}), func(out []byte) error {
				_, err := c.names.UnpackNameOf(out)
				return err
			})
			if err != nil {
				errs = append(errs, c.viewFailed(err, "check names", "NAMES", c.cfg.Names, "not a VeilNames registry (nameOf() failed: %v)"))
			}
		}
	}
	for _, t := range c.cfg.Tokens {
		if err := c.checkToken(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Connector) checkToken(ctx context.Context, t Token) error {
	if err := c.requireCode(ctx, t.Address, "TOKENS"); err != nil {
		return fmt.Errorf("%w (token %s)", err, t.Symbol)
	}
	var dec uint8
	err := c.view(ctx, t.Address, c.token.PackDecimals(), func(out []byte) (err error) {
		dec, err = c.token.UnpackDecimals(out)
		return err
	})
	switch {
	case err != nil:
		return c.viewFailed(err, "check token "+t.Symbol, "TOKENS", t.Address, "token %s: not an ERC-20 with decimals() (%v)", t.Symbol)
	case int(dec) != t.Decimals:
		return c.misconfigured("TOKENS", t.Address, "token %s has %d decimals on chain, configured %d: amounts would be off by 10^%d; write %s=%s:%d",
			t.Symbol, dec, t.Decimals, absDiff(int(dec), t.Decimals), t.Symbol, t.Address.Hex(), dec)
	}
	return nil
}

// view calls a view method of the contract at addr (data: the call) and
// reads its answer with unpack.
func (c *Connector) view(ctx context.Context, addr common.Address, data []byte, unpack func(out []byte) error) error {
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{To: &addr, Data: data}, nil)
	if err != nil {
		return err
	}
	return unpack(out)
}

// viewFailed is the verdict on a failed view of a configured contract
// (check names the check, what the variable that configures addr): a node
// that did not answer is chains.ErrUnavailable; a call the contract
// refused, or an answer it cannot have given, is ErrMisconfigured, said by
// format with args and the error.
func (c *Connector) viewFailed(err error, check, what string, addr common.Address, format string, args ...any) error {
	if !isRPCAnswer(err) {
		return c.Unavailable(check, err)
	}
	return c.misconfigured(what, addr, format, append(args, err)...)
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

// requireCode fails unless addr holds contract code at the latest block.
// what is the variable suffix that configures addr (SENDER, NAMES, …).
func (c *Connector) requireCode(ctx context.Context, addr common.Address, what string) error {
	code, err := c.eth.CodeAt(ctx, addr, nil)
	if err != nil {
		return c.Unavailable("code of "+addr.Hex(), err)
	}
	if len(code) == 0 {
		return c.misconfigured(what, addr, "no contract code at this address (an ordinary account, a typo, or another network's address); nothing is sent there. Deploy with `veild contracts deploy --chain %s` and use the addresses it prints", c.cfg.Chain)
	}
	return nil
}

// requireToken is requireCode for the token of a, when a is a token.
func (c *Connector) requireToken(ctx context.Context, a asset) error {
	if a.Native() {
		return nil
	}
	if err := c.requireCode(ctx, a.token, "TOKENS"); err != nil {
		return fmt.Errorf("%w (token %s)", err, a.Symbol)
	}
	return nil
}

// isRPCAnswer reports whether err is the node's answer (a revert, an
// undecodable result) rather than a failure to reach it.
func isRPCAnswer(err error) bool {
	if err == nil {
		return false
	}
	var re interface{ ErrorCode() int }
	if errors.As(err, &re) {
		return true
	}
	// An ABI decoding error of a result the node did return.
	return !isTransport(err)
}

func isTransport(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var he interface{ Timeout() bool } // net.Error
	if errors.As(err, &he) {
		return true
	}
	return mentions(err, "connection refused", "connection reset", "no such host", "eof", "broken pipe", "http status", "dial tcp")
}

// mentions reports whether err's text contains one of words (lower case),
// in any case.
func mentions(err error, words ...string) bool {
	msg := strings.ToLower(err.Error())
	for _, w := range words {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// CheckContracts runs Check's checks of cfg over an RPC connection, without
// a connector (`veild contracts deploy` checks what it deployed with it).
func CheckContracts(ctx context.Context, rc *rpc.Client, cfg Config) error {
	cfg.defaults()
	c := &Connector{Base: connopts.NewBase(cfg.Chain, cfg.ExplorerTx, cfg.ChainID, cfg.assets()), cfg: cfg, rpc: rc, eth: ethclient.NewClient(rc), opts: Options{Log: slog.New(slog.DiscardHandler)},
		sender: bindings.NewStealthSender(), names: bindings.NewVeilNames(), token: bindings.NewTestToken(), ann: bindings.NewERC5564Announcer()}
	return c.Check(ctx)
}
