// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title Veil name registry
/// @notice Maps `name` (of `name.veil`) to the owner's ERC-5564 stealth
/// meta-address, and each owner back to its name. A name is 3 to 32
/// characters of [a-z0-9-]. Registration is authorised by the owner's key:
/// the owner is msg.sender. An owner has at most one name; it may re-register
/// its own name to publish a new meta-address. A name held by another owner
/// cannot be taken.
contract VeilNames {
    struct Record {
        address owner;
        bytes metaAddress;
    }

    mapping(bytes32 => Record) private records;
    mapping(address => string) private reverse;

    /// @notice Emitted on every registration or meta-address update.
    event NameRegistered(bytes32 indexed nameHash, address indexed owner, string name, bytes metaAddress);

    error InvalidName();
    error InvalidMetaAddress();
    error NameTaken();
    error OwnerHasName(string name);

    /// @notice Registers name to msg.sender with metaAddress: the 66 bytes of
    /// the compressed spending and viewing public keys.
    function register(string calldata name, bytes calldata metaAddress) external {
        if (!validName(name)) revert InvalidName();
        if (
            metaAddress.length != 66 || (metaAddress[0] != 0x02 && metaAddress[0] != 0x03)
                || (metaAddress[33] != 0x02 && metaAddress[33] != 0x03)
        ) revert InvalidMetaAddress();
        bytes32 h = keccak256(bytes(name));
        Record storage r = records[h];
        if (r.owner != address(0) && r.owner != msg.sender) revert NameTaken();
        string storage current = reverse[msg.sender];
        if (bytes(current).length != 0 && keccak256(bytes(current)) != h) revert OwnerHasName(current);
        r.owner = msg.sender;
        r.metaAddress = metaAddress;
        if (bytes(current).length == 0) reverse[msg.sender] = name;
        emit NameRegistered(h, msg.sender, name, metaAddress);
    }

    /// @notice The owner and meta-address of name; zero values when unregistered.
    function resolve(string calldata name) external view returns (address owner, bytes memory metaAddress) {
        Record storage r = records[keccak256(bytes(name))];
        return (r.owner, r.metaAddress);
    }

    /// @notice Reverse lookup: the name owner holds, or "".
    function nameOf(address owner) external view returns (string memory) {
        return reverse[owner];
    }

    /// @notice Whether name is 3 to 32 characters of [a-z0-9-].
    function validName(string calldata name) public pure returns (bool) {
        bytes calldata b = bytes(name);
        if (b.length < 3 || b.length > 32) return false;
        for (uint256 i = 0; i < b.length; i++) {
            bytes1 c = b[i];
            if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2d)) return false;
        }
        return true;
    }
}
