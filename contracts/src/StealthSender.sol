// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IERC5564Announcer {
    function announce(uint256 schemeId, address stealthAddress, bytes memory ephemeralPubKey, bytes memory metadata)
        external;
}

/// @title Veil stealth sender
/// @notice Pays a one-time stealth address and announces the payment through
/// the ERC-5564 Announcer in the same transaction, so a payment is never
/// visible without its announcement (or the reverse). The sender holds
/// nothing between transactions and pulls tokens only from msg.sender, so an
/// unlimited allowance to it exposes nothing but the approver's own calls.
contract StealthSender {
    /// @notice ERC-5564 scheme 1: secp256k1 with 1-byte view tags.
    uint256 public constant SCHEME_ID = 1;
    bytes4 internal constant NATIVE_MARKER = 0xeeeeeeee;
    address internal constant NATIVE_TOKEN = 0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE;
    bytes4 internal constant TRANSFER_SELECTOR = 0xa9059cbb; // transfer(address,uint256)
    bytes4 internal constant TRANSFER_FROM_SELECTOR = 0x23b872dd; // transferFrom(address,address,uint256)

    IERC5564Announcer public immutable announcer;

    error ZeroAmount();
    error ZeroAddress();
    error BadEphemeralKey();
    error NativeTransferFailed();
    error TokenTransferFailed();

    constructor(IERC5564Announcer announcer_) {
        if (address(announcer_) == address(0)) revert ZeroAddress();
        announcer = announcer_;
    }

    /// @notice Sends msg.value of the native asset to stealthAddress and announces it.
    function sendNative(address payable stealthAddress, bytes calldata ephemeralPubKey, bytes1 viewTag)
        external
        payable
    {
        if (msg.value == 0) revert ZeroAmount();
        _check(stealthAddress, ephemeralPubKey);
        _sendNative(stealthAddress, msg.value);
        announcer.announce(
            SCHEME_ID, stealthAddress, ephemeralPubKey, abi.encodePacked(viewTag, NATIVE_MARKER, NATIVE_TOKEN, msg.value)
        );
    }

    /// @notice Moves amount of token from msg.sender to stealthAddress (the
    /// sender must have approved this contract) and announces it. msg.value,
    /// if any, goes to stealthAddress too, as gas for spending the tokens; it
    /// is not part of the announced amount.
    function sendToken(
        address token,
        uint256 amount,
        address payable stealthAddress,
        bytes calldata ephemeralPubKey,
        bytes1 viewTag
    ) external payable {
        if (amount == 0) revert ZeroAmount();
        if (token == address(0)) revert ZeroAddress();
        _check(stealthAddress, ephemeralPubKey);
        (bool ok, bytes memory ret) =
            token.call(abi.encodeWithSelector(TRANSFER_FROM_SELECTOR, msg.sender, stealthAddress, amount));
        if (!ok || (ret.length != 0 && !abi.decode(ret, (bool))) || (ret.length == 0 && token.code.length == 0)) {
            revert TokenTransferFailed();
        }
        if (msg.value != 0) _sendNative(stealthAddress, msg.value);
        announcer.announce(
            SCHEME_ID, stealthAddress, ephemeralPubKey, abi.encodePacked(viewTag, TRANSFER_SELECTOR, token, amount)
        );
    }

    function _check(address stealthAddress, bytes calldata ephemeralPubKey) internal pure {
        if (stealthAddress == address(0)) revert ZeroAddress();
        if (ephemeralPubKey.length != 33 || (ephemeralPubKey[0] != 0x02 && ephemeralPubKey[0] != 0x03)) {
            revert BadEphemeralKey();
        }
    }

    function _sendNative(address payable to, uint256 value) internal {
        (bool ok,) = to.call{value: value}("");
        if (!ok) revert NativeTransferFailed();
    }
}
